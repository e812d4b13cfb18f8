"""The JSON views read from the database (acp_proxy/export/listing.py) against the fold of
every frame, byte for byte: what ``tools|terminals|diffs --json`` printed when it built the
whole reconstruction first.

No tests here; the test modules import it.
"""

from __future__ import annotations

import io
from pathlib import Path

from acp_proxy.export.listing import VIEWS, write_view
from acp_proxy.reconstruct import reconstruct
from acp_proxy.reconstruct.views import diffs_json, terminals_json, tools_json
from acp_proxy.store.refs import Source, resolve
from acp_proxy.text.safe import json_bytes

_TO_JSON = {"tools": tools_json, "terminals": terminals_json, "diffs": diffs_json}


def folded(source: Source, view: str, at: int | None = None, session: str | None = None) -> bytes:
    """The view from a reconstruction of every frame, printed as one JSON document."""
    r = reconstruct(source.plain_frames(upto_seq=at), at=at)
    if session is not None:
        r.only_session(session)
    return json_bytes(_TO_JSON[view](r)) + b"\n"


def streamed(source: Source, view: str, at: int | None = None, session: str | None = None) -> bytes:
    """The view from the frames it needs alone (raises NotStreamable where that is not exact)."""
    out = io.BytesIO()
    write_view(source, view, out, at=at, session=session, fold_all=False)
    return out.getvalue()


def written(source: Source, view: str, at: int | None = None, session: str | None = None) -> bytes:
    """The view as the command writes it: streamed, else from every frame."""
    out = io.BytesIO()
    write_view(source, view, out, at=at, session=session)
    return out.getvalue()


def assert_views_stream(db: Path, capture: str | None = None, ats: tuple[int, ...] = ()) -> None:
    """Every JSON view of ``capture`` (the latest when ``None``), at its end and at each of
    ``ats``, for every session and each one alone, is streamed and is the fold of every frame."""
    source = resolve(capture, db)
    try:
        sessions = {t.session_id for t in reconstruct(source.plain_frames()).turns}
        sessions |= set(reconstruct(source.plain_frames()).sessions)
        for view in VIEWS:
            for at in (None, *ats):
                for session in (None, *sorted(s for s in sessions if s is not None)):
                    expected = folded(source, view, at, session)
                    assert streamed(source, view, at, session) == expected, (view, at, session)
    finally:
        source.close()

"""The text of ``tools``, ``terminals`` and ``diffs`` made from the frames each view needs
alone (acp_proxy/export/listing.py ``fold_view``), and the JSON of the views folded from
their frames alone (``files``, ``mcp``: acp_proxy/reconstruct/stream.py ``FOLDED``): line for
line and byte for byte what the fold of every frame gives — for the bundled captures, at
points along them and per session, and for hostile captures; where the choice is not exact
the command folds every frame instead."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from support.messages import (
    frame_bytes,
    import_after_initialize,
)
from support.paths import DATA, RECORDINGS

from acp_proxy.export.listing import VIEWS, fold_view
from acp_proxy.export.load import import_file
from acp_proxy.reconstruct import Reconstruction, reconstruct
from acp_proxy.reconstruct.stream import FOLDED, NotStreamable
from acp_proxy.reconstruct.views import files_json, mcp_calls_json
from acp_proxy.store.refs import Source, resolve
from acp_proxy.text.safe import json_bytes
from acp_proxy.text.style import plain
from acp_proxy.text.views import diffs_lines, terminals_lines, tools_lines

CAPTURES = sorted(RECORDINGS.glob("*.jsonl")) + sorted((DATA / "reconstruct").glob("*.jsonl"))
_LINES: dict[str, Callable[[Reconstruction], Iterator[Any]]] = {
    "tools": tools_lines,
    "terminals": terminals_lines,
    "diffs": diffs_lines,
}


_JSON: dict[str, Callable[[Reconstruction], Any]] = {"files": files_json, "mcp": mcp_calls_json}
assert set(_JSON) == set(FOLDED)


def _text(view: str, r: Reconstruction) -> list[str] | bytes:
    if view in _JSON:
        return json_bytes(_JSON[view](r))
    return [plain(line) for line in _LINES[view](r)]


def _every_frame(
    source: Source, view: str, at: int | None, session: str | None
) -> list[str] | bytes:
    r = reconstruct(source.plain_frames(upto_seq=at), at=at)
    if session is not None:
        r.only_session(session)
    return _text(view, r)


def _selected(source: Source, view: str, at: int | None, session: str | None) -> list[str] | bytes:
    r = fold_view(source, view, at)
    if session is not None:
        r.only_session(session)
    return _text(view, r)


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_the_text_of_a_view_from_its_frames_is_that_of_every_frame(
    path: Path, tmp_path: Path
) -> None:
    db = tmp_path / "views.sqlite"
    [imported] = import_file(db, path)
    source = resolve(str(imported.capture_id), db)
    try:
        whole = reconstruct(source.plain_frames())
        sessions = sorted(s for s in {*whole.sessions, *(t.session_id for t in whole.turns)} if s)
        ats = (None, *range(0, imported.frames, max(1, imported.frames // 6)))
        for view in (*VIEWS, *FOLDED):
            for at in ats:
                for session in (None, *sessions):
                    try:
                        got = _selected(source, view, at, session)
                    except NotStreamable:
                        continue
                    assert got == _every_frame(source, view, at, session), (view, at, session)
    finally:
        source.close()


def test_mcp_calls_are_listed_after_the_tool_calls(tmp_path: Path) -> None:
    path = DATA / "reconstruct" / "v1-mcp-over-acp.jsonl"
    db = tmp_path / "mcp.sqlite"
    [imported] = import_file(db, path)
    source = resolve(str(imported.capture_id), db)
    try:
        lines = _selected(source, "tools", None, None)
    finally:
        source.close()
    assert any(line.startswith("mcp ") for line in lines), lines


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hostile-text")


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 2), st.lists(frame_bytes(), max_size=30), st.integers(0, 35))
def test_hostile_captures_read_as_every_frame_folds(
    work: Path, version: int, items: list[tuple[object, bytes, object]], at: int
) -> None:
    db = work / "hostile.sqlite"
    source = resolve(str(import_after_initialize(db, work, version, items)), db)  # type: ignore[arg-type]
    try:
        for view in (*VIEWS, *FOLDED):
            for upto in (None, at):
                try:
                    got = _selected(source, view, upto, None)
                except NotStreamable:
                    event("every frame folded")
                    continue
                event("from its frames")
                assert got == _every_frame(source, view, upto, None), (view, upto)
    finally:
        source.close()

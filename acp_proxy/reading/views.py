"""What the user saw, read from a capture: its reconstruction and the views of it.

What belongs here: the frames a fold needs (:func:`plain_frames`, with progress told as
they are read), the reconstruction at the end or at a frame, of one session when asked
(:func:`reconstruction`), the JSON of each view (:data:`VIEWS`), the ``tools``,
``terminals`` and ``diffs`` views written as JSON item by item (:func:`write_json_view`),
and the text of the ``asciicast`` and ``patch`` exports (:func:`export_text`). A view's
text for a terminal is made by :mod:`acp_proxy.text.views`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any, Protocol, TypeVar

import orjson

from acp_proxy import collector
from acp_proxy.errors import StoreError, UsageError
from acp_proxy.protocol.frames import Direction, Frame, Opcode
from acp_proxy.reading.capture import OpenCapture
from acp_proxy.reconstruct import Reconstruction, reconstruct
from acp_proxy.reconstruct import views as rviews
from acp_proxy.reconstruct.session import Turn
from acp_proxy.reconstruct.updates import CHUNKS, FILES, SESSIONS
from acp_proxy.store.reader import Store
from acp_proxy.store.scan import CHUNK, COUNTED, UNREAD, fold_rows, raws_among

T = TypeVar("T")

__all__ = [
    "PARTS_OF",
    "SELECTED",
    "STREAMED",
    "VIEWS",
    "WITHOUT_TEXT",
    "ReadProgress",
    "export_text",
    "fold_since",
    "plain_frames",
    "read_text",
    "reconstruction",
    "view_reconstruction",
    "write_json_view",
]

VIEWS: dict[str, Callable[[Reconstruction], Any]] = {
    "turns": rviews.turns_json,
    "tools": rviews.tools_json,
    "permissions": rviews.permissions_json,
    "terminals": rviews.terminals_json,
    "diffs": rviews.diffs_json,
    "files": rviews.files_json,
    "sessions": rviews.sessions_json,
}
"""The views of a reconstruction, by name, as JSON (``show --view NAME --json``)."""

STREAMED = ("tools", "terminals", "diffs")
"""The views written item by item as they are folded (:func:`write_json_view`)."""
SELECTED = (*STREAMED, "files")
"""The views whose text (and the JSON of ``files``) is made from a fold of the frames the
view needs alone (:func:`view_reconstruction`)."""


class ReadProgress(Protocol):
    """Told how much of a capture has been read (the command line draws it on stderr)."""

    def wrap(self, items: Iterator[T]) -> Iterator[T]: ...
    def advance(self, n: int = 1) -> None: ...
    def clear(self) -> None: ...


def plain_frames(
    cap: OpenCapture, at: int | None = None, progress: ReadProgress | None = None
) -> Iterator[Frame]:
    """The frames of ``cap`` (up to frame ``at``), as a fold needs them."""
    if cap.is_file:
        return (sf.frame for sf in cap.source.frames(upto_seq=at))
    frames = cap.source.plain_frames(upto_seq=at)
    return frames if progress is None else progress.wrap(frames)


def reconstruction(
    cap: OpenCapture,
    at: int | None = None,
    *,
    session: str | None = None,
    progress: ReadProgress | None = None,
    parts: frozenset[str] | None = None,
    text: bool = True,
) -> Reconstruction:
    """What the user saw of ``cap``: at its end, or after frame ``at``; of one session and
    its children alone with ``session``; with ``parts``, those parts alone
    (:data:`PARTS_OF`): what they do not keep is not read whole. Without ``text``, the
    turns' message chunks are left in their frames where the recorder's fields tell them:
    read the text of the turns shown with :func:`read_text`."""
    if parts is None or cap.is_file:
        r = reconstruct(plain_frames(cap, at, progress), at=at)
    else:
        r = Reconstruction(parts)
        _fold_parts(cap, r, at, progress, text)
    if session is not None:
        r.only_session(session)
    return r


PARTS_OF = {
    **{view: frozenset({SESSIONS}) for view in ("turns", "permissions", "sessions")},
    "files": frozenset({FILES}),
}
"""The parts of a reconstruction a view reads (the others read all of it)."""

WITHOUT_TEXT = frozenset({"permissions", "sessions", "files"})
"""The views of :data:`PARTS_OF` that show nothing the agent said: their fold leaves the
message chunks' text in the frames (:func:`reconstruction` without ``text``)."""


def read_text(store: Store, capture_id: int, turns: Iterable[Turn]) -> None:
    """Read the text ``turns`` (of a fold of capture ``capture_id`` made without ``text``,
    :func:`reconstruction`) left in their frames: one pass over the frames from the first
    to the last of them."""
    turns = [t for t in turns if t.pending]
    seqs = set().union(*(t.pending_seqs() for t in turns))
    loads = orjson.loads
    updates = {
        seq: loads(raw)["params"]["update"]
        for seq, raw in raws_among(store.conn, capture_id, seqs, CHUNKS)
    }
    if len(updates) < len(seqs):  # removed since it was folded
        raise StoreError(f"capture {capture_id} lost frames while it was read: look again")
    for turn in turns:
        turn.read_text(updates)


def fold_since(cap: OpenCapture, r: Reconstruction, text: bool = True) -> None:
    """Bring ``r``, the fold of some parts of capture ``cap`` to its end (made by
    :func:`reconstruction` with ``parts``, without ``session``), up to the frames recorded
    since: a capture being recorded is folded once."""
    _fold_parts(cap, r, None, None, text, after=r.last_seq)


def _fold_parts(
    cap: OpenCapture,
    r: Reconstruction,
    at: int | None,
    progress: ReadProgress | None,
    text: bool = True,
    after: int = -1,
) -> None:
    """Fold into ``r`` (of some parts) the frames after ``after`` (up to ``at``) from the
    database: the updates it only counts are counted from the fields the recorder derived,
    and the frames of methods it keeps nothing of (another part's) only numbered, their
    bytes left unread."""
    store = cap.source.store
    assert store is not None
    feed, count, chunk, loads = r.feed, r.feed_counted, r.feed_chunk, orjson.loads
    unread = r.feed_unread
    tick = progress.advance if progress is not None else None
    rows = fold_rows(
        store.conn,
        cap.id,
        counted=r.counted,
        chunks=CHUNKS,
        unread=r.unread,
        after_seq=after,
        upto_seq=at,
        runs=not text,
    )
    directions = {d.value: d for d in Direction}
    opcodes: dict[str | None, Opcode | None] = {None: None, **{o.value: o for o in Opcode}}
    chunks, read = r.feed_chunks, 0
    # the fold makes no cycles; one from the first frame is kept (the frames since a kept
    # fold are few: nothing to freeze for them)
    with collector.paused(keep=after < 0):
        for how, seq, d, t_ns, raw, terminated, opcode, sid, kind, frames in rows:
            if how == COUNTED:
                count(seq, t_ns, sid or "", kind)
            elif how == CHUNK:
                if raw is None:  # a run of chunks, their text left in their frames
                    chunks(seq, t_ns, sid or "", kind, frames)
                else:
                    chunk(seq, t_ns, sid or "", kind, loads(raw)["params"]["update"])
            elif how == UNREAD:
                assert raw is not None  # what pairs it: [kind, method, id token]
                unread(seq, t_ns, directions[d], *loads(raw))
            else:
                assert raw is not None
                feed(Frame(seq, directions[d], t_ns, raw, bool(terminated), opcodes.get(opcode)))
            if tick is not None:
                read += frames
                if read >= 4096:
                    tick(read)
                    read = 0


def view_reconstruction(
    cap: OpenCapture,
    view: str,
    at: int | None = None,
    *,
    session: str | None = None,
    progress: ReadProgress | None = None,
) -> Reconstruction | None:
    """What the text of ``view`` (one of :data:`SELECTED`) is made from, folded from the
    frames that view needs alone (a few of a large capture), as its JSON is; None where
    that choice would not be exact, or for a ``jsonl`` export: fold every frame then
    (:func:`reconstruction`)."""
    from acp_proxy.export.listing import fold_view
    from acp_proxy.reconstruct.stream import NotStreamable

    if cap.is_file or view not in SELECTED:
        return None
    try:
        r = fold_view(cap.source, view, at, progress)
    except NotStreamable:
        return None
    if session is not None:
        r.only_session(session)
    return r


def write_json_view(
    cap: OpenCapture,
    view: str,
    out: IO[bytes],
    at: int | None = None,
    *,
    session: str | None = None,
    progress: ReadProgress | None = None,
) -> None:
    """One of :data:`STREAMED` as JSON to ``out``, written as it is folded
    (:func:`~acp_proxy.export.listing.write_view`)."""
    from acp_proxy.export.listing import write_view

    if cap.is_file:
        write_view(cap.source, view, out, at=at, session=session)
    else:
        write_view(cap.source, view, out, at=at, session=session, progress=progress)


def export_text(r: Reconstruction, fmt: str, terminal: str | None = None) -> tuple[str, list[str]]:
    """The text of an ``asciicast`` (of ``terminal``, or the capture's only one) or
    ``patch`` export of ``r``, and what to warn of."""
    from acp_proxy.export.core.asciicast import asciicast
    from acp_proxy.export.core.patch import session_patch

    if fmt == "patch":
        result = session_patch(r)
        notes = [f"skipped {path}: {why}" for path, why in result.skipped]
        if not result.text:
            notes.append("no text changes whose contents or patch text are known")
        return result.text, notes
    terms = list(r.terminals.values())
    if terminal is None:
        if len(terms) != 1:
            ids = ", ".join(t.terminal_id for t in terms) or "none"
            raise UsageError(f"give --terminal ID (terminals in this capture: {ids})")
        return asciicast(terms[0]), []
    found = [t for t in terms if t.terminal_id == terminal]
    if not found:
        ids = ", ".join(t.terminal_id for t in terms) or "none"
        raise UsageError(f"no terminal {terminal!r} (terminals in this capture: {ids})")
    notes = [] if len(found) == 1 else [f"{terminal} is in several sessions; using the first"]
    return asciicast(found[0]), notes

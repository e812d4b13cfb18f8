"""What the inspector's reconstruction views are made from, at any size.

What belongs here: :class:`Folds`, the reconstructions the server keeps — the whole fold of
a capture up to :data:`FOLD_MAX` frames, brought up to date as it grows; past it, each view
folded from the frames or the parts it needs (as ``show --view`` folds them), the last of
each kind kept, made once and, of the parts of a capture being recorded, brought up to
date —, and the pages of a view. The views' JSON is
:mod:`acp_proxy.reconstruct.views`'; the state at a frame, :mod:`acp_proxy.ui.at_frame`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import orjson

from acp_proxy.errors import UsageError
from acp_proxy.export.listing import Spool
from acp_proxy.reading import views as reading_views
from acp_proxy.reading.views import PARTS_OF, read_text
from acp_proxy.reconstruct import Reconstruction, reconstruct
from acp_proxy.reconstruct import views as rviews
from acp_proxy.reconstruct.session import Turn
from acp_proxy.reconstruct.updates import SESSIONS
from acp_proxy.settings import number
from acp_proxy.store.reader import Store

__all__ = [
    "FOLD_MAX",
    "PARTED",
    "PARTS",
    "STREAMED",
    "VIEWS",
    "Folds",
    "capture_uid",
    "check_foldable",
    "frames_upto",
    "page_of",
]

FOLD_MAX = int(number("ACP_PROXY_UI_FOLD_MAX", 100_000, most=1e12, integer=True))
"""The most frames the server folds whole (every part of the reconstruction, kept and brought
up to date as a live capture grows): past it the memory a whole fold takes (hundreds of MB
for a million frames) would break the server's budget, so each view is folded from the
frames or the parts it needs alone (:meth:`Folds.view`), and the exports that need the
whole fold (``html``, ``patch``, ``asciicast``) are refused with the command to run.
``ACP_PROXY_UI_FOLD_MAX`` lowers it (the tests: a large capture without recording one)."""

VIEWS: dict[str, Callable[[Reconstruction], Any]] = {
    **reading_views.VIEWS,
    "messages": rviews.session_messages_json,
    "mcp": rviews.mcp_calls_json,
}
"""The views of ``show --view``, and two the inspector shows in the sessions and tools
tabs: the messages between sessions and the MCP calls."""

STREAMED = reading_views.STREAMED
"""The views the commands write as they fold only the frames they need: served at any
size."""

PARTS: dict[str, frozenset[str]] = {
    **PARTS_OF,
    "messages": frozenset({SESSIONS}),
    "mcp": frozenset(),
}
"""The parts of a reconstruction each other view is folded from past :data:`FOLD_MAX`, the
updates it only counts left unread, as ``show --view`` folds them: the messages between
sessions and the MCP calls are folded whatever the parts (the sessions part is the one the
sessions tab reads already). ``files`` and ``mcp`` are first folded from their frames
alone (:data:`~acp_proxy.reconstruct.stream.FOLDED`), from their parts where that choice
would not be exact."""
PARTED = tuple(PARTS)

_ITEMS: dict[str, Callable[[Reconstruction], tuple[list[Any], Callable[[Any], Any]]]] = {
    "turns": lambda r: (r.turns, lambda t: rviews.turn_json(r, t)),
    "permissions": lambda r: (r.permissions, rviews.permission_json),
}
"""The views whose page is made of its items alone (a million frames' turns take longer to
write as JSON than the page to show)."""


def capture_uid(store: Store, capture_id: int) -> str | None:
    """The capture's stable id: a fold kept under its number is of another capture once
    that one is removed and the number given again."""
    row = store.conn.execute("SELECT uid FROM captures WHERE id = ?", [capture_id]).fetchone()
    return None if row is None else str(row[0])


def frames_upto(store: Store, capture_id: int, at: int | None) -> int:
    """How many frames the capture has up to frame ``at`` (all of them without)."""
    row = store.conn.execute(
        "SELECT COALESCE(MAX(seq), -1) FROM messages WHERE capture_id = ?", [capture_id]
    ).fetchone()
    return int(row[0] + 1 if at is None else min(row[0], at) + 1)


def page_of(items: Any, offset: int, limit: int) -> dict[str, Any]:
    """``items[offset:offset + limit]`` with how many there are in all: a view shown a
    page at a time."""
    if not isinstance(items, list):
        raise UsageError("this view is not a list: ask for it without limit")
    offset = max(0, offset)
    return {"items": items[offset : offset + max(1, limit)], "total": len(items), "offset": offset}


def check_foldable(
    store: Store,
    capture_id: int,
    at: int | None = None,
    limit: int | None = None,
    fmt: str = "FORMAT",
) -> None:
    """Refuse, with the command to run instead, an export in ``fmt`` that needs the fold
    of more than ``limit`` frames (:data:`FOLD_MAX`)."""
    limit = FOLD_MAX if limit is None else limit
    frames = frames_upto(store, capture_id, at)
    if frames > limit:
        raise UsageError(
            f"too large to fold here ({frames} frames; the server folds at most {limit}): "
            f"use acp-proxy export {capture_id} --format {fmt}"
        )


class Folds:
    """Reconstructions of captures, kept for the last few looked at and brought up to date
    by feeding only the frames recorded since (a live capture is folded once); past
    :data:`FOLD_MAX` frames, the last view streamed and the last reconstruction of some
    parts instead (the page asks for a view a page at a time, and the sessions tab for the
    sessions and the messages between them, of one fold)."""

    def __init__(self, keep: int = 2) -> None:
        self.keep = keep
        self.lock = threading.Lock()
        # (capture, its uid) -> its whole fold, and the last frame folded
        self._folds: OrderedDict[tuple[int, str | None], tuple[Reconstruction, int]] = OrderedDict()
        self._streamed: tuple[tuple[Any, ...], Any] | None = None
        # per kind of fold (a view of FOLDED, or parts): the last one, and the one being
        # made — one at a time of each kind, so a live capture's refreshes, each of a new
        # frame, wait in turn rather than hold a fold each
        self._parted: dict[Any, tuple[_PartedKey, Reconstruction]] = {}
        self._folding: dict[Any, threading.Event] = {}
        # a kept parted fold is read, its turns' text read (read_text) or brought up to
        # date (a capture being recorded) by one thread at a time
        self._reading = threading.RLock()
        self._once = threading.Lock()  # folds not kept (once), made one at a time

    def view(self, store: Store, capture_id: int, name: str, at: int | None = None) -> Any:
        """The view ``name`` of the capture's reconstruction, after frame ``at`` (or now).
        Past :data:`FOLD_MAX` frames, ``tools``, ``terminals`` and ``diffs`` are streamed as
        the commands stream them (only the frames the view needs are read), the others
        folded from what they need (:meth:`parted`)."""
        to_json = _view_function(name)
        if frames_upto(store, capture_id, at) > FOLD_MAX:
            if name in STREAMED:
                return self.streamed(store, capture_id, name, at, None)["items"]
            r = self.parted(store, capture_id, name, at)
            with self._reading:
                self.read_text(store, capture_id, r.turns if name == "turns" else ())
                return to_json(r)
        if at is not None:
            frames = (sf.frame for sf in store.frames(capture_id, upto_seq=at))
            return to_json(reconstruct(frames, at=at))
        with self.lock:
            return to_json(self.current(store, capture_id))

    def page(
        self, store: Store, capture_id: int, name: str, at: int | None, offset: int, limit: int
    ) -> dict[str, Any]:
        """A page of the view ``name`` (:func:`page_of`); of turns and permissions, and of
        the streamed views, only the items of the page are made (or read back)."""
        items = _ITEMS.get(name)
        large = frames_upto(store, capture_id, at) > FOLD_MAX
        if large and name in STREAMED:
            return self.streamed(store, capture_id, name, at, (max(0, offset), max(1, limit)))
        if items is None:
            return page_of(self.view(store, capture_id, name, at), offset, limit)
        if large:
            r = self.parted(store, capture_id, name, at)

            def read(page: list[Any]) -> None:  # a page of turns: their text, first
                self.read_text(store, capture_id, page if name == "turns" else ())

            with self._reading:
                return _page_items(*items(r), offset, limit, read)
        if at is not None:
            r = reconstruct((sf.frame for sf in store.frames(capture_id, upto_seq=at)), at=at)
            return _page_items(*items(r), offset, limit)
        with self.lock:
            return _page_items(*items(self.current(store, capture_id)), offset, limit)

    def streamed(
        self,
        store: Store,
        capture_id: int,
        name: str,
        at: int | None,
        window: tuple[int, int] | None,
    ) -> dict[str, Any]:
        """A page (``window``: offset and limit; None: every item) of one of
        :data:`STREAMED`, as :func:`page_of` makes it: folded as the commands stream it, its
        items written to a spool file (:class:`~acp_proxy.export.listing.Spool`) and read
        back a page at a time; the last one is kept (the page asks for it a page at a time).
        Where that fold would not be exact, every frame of the view's part is folded and
        the list kept."""
        last = frames_upto(store, capture_id, at)
        key = (capture_id, capture_uid(store, capture_id), name, at, last)
        with self.lock:
            if self._streamed is not None and self._streamed[0] == key:
                return _window(self._streamed[1], window)
            self._drop_streamed()  # the last one goes before the next is made
        made = _streamed_list(store, capture_id, name, at)
        with self.lock:
            self._drop_streamed()
            self._streamed = (key, made)
            return _window(made, window)

    def _drop_streamed(self) -> None:
        """Let the last streamed view go (call with :attr:`lock` held: pages of a spool
        are read under it)."""
        if self._streamed is not None and isinstance(self._streamed[1], Spool):
            self._streamed[1].close()
        self._streamed = None

    def parted(self, store: Store, capture_id: int, name: str, at: int | None) -> Reconstruction:
        """What the view ``name`` (one of :data:`PARTED`) is made from, up to frame ``at``:
        ``files`` and ``mcp`` folded from the frames they need alone where that is exact,
        else (and the others) from the parts of :data:`PARTS`, as ``show --view`` folds
        them. The last fold of each kind is kept — the views of one part share it: the
        turns, permissions and sessions tabs, the messages between sessions —, and a fold
        being made is waited for, not made twice (two tabs opened at once); folds of one
        kind are made one at a time, so memory holds at most two of a kind (the one being
        made and one handed out), whatever is asked at once. A capture being recorded has
        the fold of its parts kept brought up to date with the frames since, not made
        again (its readers hold :attr:`_reading` meanwhile)."""
        from acp_proxy.reconstruct.stream import FOLDED

        kind = name if name in FOLDED else PARTS[name]
        key = _PartedKey(
            capture_id, capture_uid(store, capture_id), at, frames_upto(store, capture_id, at)
        )
        while True:
            with self.lock:
                held = self._parted.get(kind)
                if held is not None and held[0] == key:
                    return held[1]
                grows = held is not None and kind != name and _grown(held[0], key)
                kept = held[1] if grows and held is not None else None
                held = None  # the last one goes before the next is made: nothing holds it
                pending = self._folding.get(kind)
                if pending is None:
                    done = self._folding[kind] = threading.Event()
                    if kept is None:
                        self._parted.pop(kind, None)
                    break
            pending.wait()  # then it is kept (the one asked for?), or it failed: see again
        try:
            if kept is not None:
                with self._reading:
                    r = _fold_since(store, capture_id, kept)
            else:
                r = _fold_for(store, capture_id, name, at)
            with self.lock:
                self._parted[kind] = (key, r)
            return r
        finally:
            with self.lock:
                del self._folding[kind]
            done.set()

    def once(self, store: Store, capture_id: int, name: str, at: int) -> Reconstruction:
        """What :meth:`parted` folds for ``name`` at frame ``at``, folded for one use and not
        kept (the state at a frame: the tabs' folds stay), one such fold at a time."""
        with self._once:
            return _fold_for(store, capture_id, name, at)

    def read_text(self, store: Store, capture_id: int, turns: Iterable[Turn]) -> None:
        """Read the text of ``turns``, of a fold :meth:`parted` made (which leaves it in
        the frames: a page of turns shows a few of them): one reader at a time, as the
        fold is shared."""
        with self._reading:
            read_text(store, capture_id, turns)

    def current(self, store: Store, capture_id: int) -> Reconstruction:
        """The reconstruction of everything recorded so far (call with :attr:`lock` held)."""
        key = (capture_id, capture_uid(store, capture_id))
        r, last = self._folds.pop(key, (None, -1))
        if r is None:
            r = reconstruct(sf.frame for sf in store.frames(capture_id))
            last = r.last_seq if r.last_seq is not None else -1
        else:
            for sf in store.frames(capture_id, after_seq=last):
                r.feed(sf.frame)
                last = sf.seq
        self._folds[key] = (r, last)
        while len(self._folds) > self.keep:
            self._folds.popitem(last=False)
        return r


def _fold_for(store: Store, capture_id: int, name: str, at: int | None) -> Reconstruction:
    """:meth:`Folds.parted`'s fold of ``name`` up to ``at``."""
    from acp_proxy.export.listing import fold_view
    from acp_proxy.reading.capture import OpenCapture
    from acp_proxy.reading.views import reconstruction
    from acp_proxy.reconstruct.stream import FOLDED, NotStreamable

    source = _source(store, capture_id)
    if name in FOLDED:
        try:
            return fold_view(source, name, at)
        except NotStreamable:
            pass  # the parts, read whole where the frames' fields do not tell
    return reconstruction(OpenCapture(source), at, parts=PARTS[name], text=False)


class _PartedKey(NamedTuple):
    """What a parted fold is of: a capture (its number and uid), up to frame ``at`` (None:
    to its end), when it had ``frames`` frames."""

    capture_id: int
    uid: str | None
    at: int | None
    frames: int


def _grown(held: _PartedKey, key: _PartedKey) -> bool:
    """Whether the fold kept under ``held`` is of the same capture as ``key``, to its end,
    and the capture has grown since."""
    same = (held.capture_id, held.uid, held.at) == (key.capture_id, key.uid, key.at)
    return same and key.at is None and held.frames < key.frames


def _fold_since(store: Store, capture_id: int, r: Reconstruction) -> Reconstruction:
    """``r``, a fold of some parts of the capture to its end, brought up to date."""
    from acp_proxy.reading.capture import OpenCapture
    from acp_proxy.reading.views import fold_since

    fold_since(OpenCapture(_source(store, capture_id)), r, text=False)
    return r


def _streamed_list(store: Store, capture_id: int, name: str, at: int | None) -> Spool | list[Any]:
    """:meth:`Folds.streamed`'s list: a spool of its items, or the items (every frame
    folded)."""
    import io

    from acp_proxy.export.listing import spool_view, write_view
    from acp_proxy.reconstruct.stream import NotStreamable

    source = _source(store, capture_id)
    try:
        return spool_view(source, name, at=at)
    except NotStreamable:
        out = io.BytesIO()
        write_view(source, name, out, at=at)
        value: list[Any] = orjson.loads(out.getvalue())
        return value


def _window(made: Spool | list[Any], window: tuple[int, int] | None) -> dict[str, Any]:
    """Items ``offset`` to ``offset + limit`` of a streamed list (all of them without
    ``window``), as :func:`page_of` makes them."""
    offset, limit = window if window is not None else (0, len(made))
    if isinstance(made, list):
        return page_of(made, offset, limit)
    read = made.items(offset, offset + limit)
    items = orjson.loads(b"[" + b",".join(read) + b"]") if read else []
    return {"items": items, "total": len(made), "offset": offset}


def _view_function(name: str) -> Callable[[Reconstruction], Any]:
    to_json = VIEWS.get(name)
    if to_json is None:
        raise UsageError(f"no view {name!r} (choose from {', '.join(VIEWS)})")
    return to_json


def _page_items(
    items: list[Any],
    to_json: Callable[[Any], Any],
    offset: int,
    limit: int,
    before: Callable[[list[Any]], None] | None = None,
) -> dict[str, Any]:
    """Items ``offset`` to ``offset + limit`` as ``to_json`` makes them (``before`` told
    which, first), as :func:`page_of` pages a list."""
    offset = max(0, offset)
    chosen = items[offset : offset + max(1, limit)]
    if before is not None:
        before(chosen)
    return {"items": [to_json(x) for x in chosen], "total": len(items), "offset": offset}


def _source(store: Store, capture_id: int) -> Any:
    from acp_proxy.store.refs import Source

    return Source(store.capture(str(capture_id)), f"capture {capture_id}", store=store)

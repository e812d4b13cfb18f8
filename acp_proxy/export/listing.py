"""The ``tools``, ``terminals`` and ``diffs`` views as one JSON list, written item by item.

What belongs here: :func:`write_view`, which prints ``acp-proxy tools|terminals|diffs
--json`` (and ``show --view`` of them) without holding the capture or the whole list in
memory. From the database it folds only the frames the view needs
(:mod:`acp_proxy.reconstruct.stream`) and writes each item once it is finished; items are
finished out of order, so they go to an unnamed temporary file (:class:`Spool`) and are
copied out in order at the end. When the view cannot be shown that way
(:class:`~acp_proxy.reconstruct.stream.NotStreamable`), and for a ``jsonl`` export, every
frame is folded instead; either way the bytes written are those of one
:func:`~acp_proxy.text.safe.json_bytes` of the whole list.
"""

from __future__ import annotations

import itertools
import os
import tempfile
from array import array
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any, Protocol

from acp_proxy import collector
from acp_proxy.reconstruct.fold import Reconstruction
from acp_proxy.reconstruct.stream import (
    PARTS,
    SELECTIONS,
    Hints,
    NotStreamable,
    Row,
    Selection,
    fold_selected,
    selection_of,
    stream_view,
)
from acp_proxy.reconstruct.views import change_json, terminal_json, tool_json
from acp_proxy.store.refs import Source
from acp_proxy.text.safe import json_bytes

__all__ = [
    "VIEWS",
    "Spool",
    "Ticker",
    "fold_view",
    "item_bytes",
    "spool_view",
    "write_list",
    "write_view",
]

VIEWS = tuple(PARTS)


class Ticker(Protocol):
    """Progress while frames are read (:class:`acp_proxy.cli.common.Progress`)."""

    def advance(self, n: int = 1) -> None: ...

    def clear(self) -> None: ...


class _Quiet:
    def advance(self, n: int = 1) -> None:
        pass

    def clear(self) -> None:
        pass


def item_bytes(item: Any) -> bytes:
    """One element of a list as :func:`json_bytes` writes the list (between its ``[\\n``
    and ``\\n]``)."""
    return json_bytes([item])[2:-2]


class Spool:
    """The items of one JSON list, written in any order to an unnamed temporary file and
    copied out in list order (:meth:`copy_to`). Memory: two integers per item."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile(buffering=1 << 20)  # noqa: SIM115 - close()
        self._offsets = array("q")
        self._ends = array("q")
        self._size = 0
        self._order: array[int] | None = None

    def add(self, position: int, item: Any) -> None:
        body = memoryview(json_bytes([item]))[2:-2]  # item_bytes(), without copying it
        self._file.write(b",\n")  # each with its separator: runs of items copy whole
        self._file.write(body)
        if position >= len(self._offsets):
            grow = position + 1 - len(self._offsets)
            self._offsets.extend([-1] * grow)
            self._ends.extend([-1] * grow)
        self._offsets[position] = self._size
        self._size += 2 + len(body)
        self._ends[position] = self._size
        self._order = None

    def __len__(self) -> int:
        """How many items have been added."""
        return len(self._written())

    def items(self, start: int, stop: int) -> list[bytes]:
        """The bytes of the items at ``start`` to ``stop`` of the list (as
        :func:`item_bytes`), read back alone: a page of a long list."""
        fd = self._file.fileno()
        self._file.flush()
        out = []
        for position in self._written()[start:stop]:
            begin, end = self._offsets[position] + 2, self._ends[position]  # no separator
            out.append(_pread_all(fd, begin, end))
        return out

    def _written(self) -> array[int]:
        """The positions items were added at, in list order (kept until the next add)."""
        if self._order is None:
            self._order = array("q", (p for p, at in enumerate(self._offsets) if at >= 0))
        return self._order

    def copy_to(self, out: IO[bytes]) -> None:
        """Write the list (and a line end, as every command's JSON) to ``out``."""
        self._file.flush()
        runs: list[list[int]] = []
        for start, end in zip(self._offsets, self._ends, strict=True):
            if start < 0:
                continue
            if not runs:
                runs.append([start + 2, end])  # the first item has no separator
            elif runs[-1][1] == start:
                runs[-1][1] = end
            else:
                runs.append([start, end])
        if not runs:
            out.write(b"[]\n")
            return
        out.write(b"[\n")
        fd = self._file.fileno()
        for start, end in runs:
            while start < end:
                data = os.pread(fd, min(end - start, 1 << 20), start)
                out.write(data)
                start += len(data)
        out.write(b"\n]\n")

    def close(self) -> None:
        self._file.close()


def _pread_all(fd: int, start: int, end: int) -> bytes:
    parts = []
    while start < end:
        data = os.pread(fd, end - start, start)
        if not data:
            raise OSError(f"the spool ends at {start}, before {end}")
        parts.append(data)
        start += len(data)
    return b"".join(parts)


def write_list(out: IO[bytes], items: Iterable[Any]) -> None:
    """The items, in order, as one JSON list (and a line end)."""
    first = True
    for item in items:
        out.write((b"[\n" if first else b",\n") + item_bytes(item))
        first = False
    out.write(b"[]\n" if first else b"\n]\n")


def write_view(
    source: Source,
    view: str,
    out: IO[bytes],
    *,
    at: int | None = None,
    session: str | None = None,
    progress: Ticker | None = None,
    fold_all: bool = True,
) -> None:
    """Write ``view`` (``tools``, ``terminals``, ``diffs``) of ``source`` up to frame ``at``
    (all of it when ``None``), of session ``session`` alone when given, as JSON to ``out``;
    ``progress`` is told how many frames have been read, as they are, and cleared before
    anything is written. Where folding only the frames the view needs cannot be exact (and
    for a ``jsonl`` export), every frame is folded; without ``fold_all``,
    :class:`~acp_proxy.reconstruct.stream.NotStreamable` is raised instead, with nothing
    written."""
    progress = progress or _Quiet()
    with collector.paused():  # the folds make no cycles
        try:
            _write_streamed(source, view, out, at, session, progress)
            return
        except NotStreamable:
            if not fold_all:
                raise
        items = _folded(source, view, at, session, progress)
        first = next(items, None)  # the fold is done: what is left is writing
        progress.clear()
        write_list(out, [] if first is None else itertools.chain([first], items))


def _write_streamed(
    source: Source,
    view: str,
    out: IO[bytes],
    at: int | None,
    session: str | None,
    progress: Ticker,
) -> None:
    spool = spool_view(source, view, at=at, session=session, progress=progress)
    try:
        progress.clear()
        spool.copy_to(out)
    finally:
        spool.close()


def spool_view(
    source: Source,
    view: str,
    *,
    at: int | None = None,
    session: str | None = None,
    progress: Ticker | None = None,
) -> Spool:
    """``view`` (``tools``, ``terminals``, ``diffs``) of ``source`` folded from the frames
    it needs and its items written to a :class:`Spool`, which the caller closes (a long
    list read a page at a time); raises
    :class:`~acp_proxy.reconstruct.stream.NotStreamable` for a ``jsonl`` export and where
    that fold would not be exact (nothing is kept then)."""
    if source.store is None:
        raise NotStreamable("a jsonl export is folded whole")
    spool = Spool()
    try:
        with collector.paused():  # the fold makes no cycles
            for position, item in _streamed(source, view, at, session, progress or _Quiet()):
                spool.add(position, item)
    except BaseException:
        spool.close()
        raise
    return spool


def _streamed(
    source: Source, view: str, at: int | None, session: str | None, progress: Ticker
) -> Iterator[tuple[int, dict[str, Any]]]:
    store, cid = source.store, source.capture["id"]
    assert store is not None
    hints = Hints()  # a file change is final when made (a write: when answered)
    if view == "tools":
        hints.tools = store.last_mentions(cid, "tool_call_id", upto_seq=at)
    elif view == "terminals":
        hints.terminals = store.last_mentions(cid, "terminal_id", upto_seq=at)
    rows = _selected_rows(source, SELECTIONS[view], at)
    return stream_view(view, rows, hints, session, _ticker(progress))


def fold_view(
    source: Source, view: str, at: int | None = None, progress: Ticker | None = None
) -> Reconstruction:
    """The part of the reconstruction ``view`` (``tools``, ``terminals``, ``diffs``, or one
    of :data:`~acp_proxy.reconstruct.stream.FOLDED`) shows, up to frame ``at``, folded from
    the frames its text needs alone
    (:func:`~acp_proxy.reconstruct.stream.fold_selected`); raises
    :class:`~acp_proxy.reconstruct.stream.NotStreamable` for a ``jsonl`` export and where
    that choice is not exact (the caller folds every frame then)."""
    if source.store is None:
        raise NotStreamable("a jsonl export is folded whole")
    rows = _selected_rows(source, selection_of(view), at)
    with collector.paused():  # the fold makes no cycles
        return fold_selected(view, rows, _ticker(progress or _Quiet()))


def _selected_rows(source: Source, s: Selection, at: int | None) -> Iterator[Row]:
    store = source.store
    assert store is not None
    return store.view_frames(
        source.capture["id"],
        methods=s.methods | s.answered,
        kinds=s.kinds,
        marked=s.marked,
        markers=s.markers,
        upto_seq=at,
    )


def _ticker(progress: Ticker) -> Callable[[int], None]:
    """``tick(seq)`` of a fold, told to ``progress`` as frames read."""
    reached = [-1]

    def tick(seq: int) -> None:
        progress.advance(seq - reached[0])
        reached[0] = seq

    return tick


def _folded(
    source: Source, view: str, at: int | None, session: str | None, progress: Ticker
) -> Iterator[dict[str, Any]]:
    r = Reconstruction(frozenset({PARTS[view]}))
    for frame in source.plain_frames(upto_seq=at):
        r.feed(frame)
        progress.advance()
    if session is not None:
        r.only_session(session)
    if view == "tools":
        yield from (tool_json(tc) for tc in r.tool_calls.values())
    elif view == "terminals":
        yield from (terminal_json(t) for t in r.terminals.values())
    else:
        yield from (change_json(c) for c in r.files.changes)

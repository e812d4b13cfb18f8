"""The ``tools``, ``terminals`` and ``diffs`` JSON views, folded from the frames they need and
written out item by item (pure, no I/O).

What belongs here: for each of those views, which frames of a capture it needs
(:data:`SELECTIONS`), and :func:`stream_view`, which folds just those frames and yields each
item's JSON (:mod:`acp_proxy.reconstruct.views`) as soon as it can no longer change, then
the rest at the end, so memory holds the items still live rather than the whole capture.
The result is the same as :func:`~acp_proxy.reconstruct.fold.reconstruct` over every frame
(docs/reconstruct.md, "Reading only what a view needs", says why); where that cannot be
shown, :class:`NotStreamable` is raised and the caller folds every frame instead.

What a view needs:

- Frames are chosen by the fields the recorder derived from them (``method``, on a response
  its request's; ``update_kind``) and, for tool call updates, by a byte test: an update can
  only link a terminal or carry a diff if its bytes hold ``"terminal"`` or ``"diff"`` as
  written, or a ``\\u`` escape that may spell it.
- Responses are paired as the recorder paired them (``request_seq``:
  :class:`~acp_proxy.reconstruct.wire.StoredPairs`).
- An item can no longer change once the last frame that names it has been folded: the
  ``hints`` say which that is, per tool call id and terminal id, from the recorder's
  ``tool_call_id`` and ``terminal_id``. A terminal also waits for the answer to a request
  whose answer changes it (:data:`~acp_proxy.reconstruct.fold.TERMINAL_ANSWERS`), and an
  anchor a tool call sends again changes nothing. A file change is final when made, an
  ``fs/write_text_file`` once answered. If a frame touches an item already written out (the
  recorder's fields did not name it), :class:`NotStreamable` is raised: nothing is guessed.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from acp_proxy.protocol.envelopes import MCP_METHODS
from acp_proxy.protocol.frames import Direction
from acp_proxy.reconstruct.filestate import FileChange
from acp_proxy.reconstruct.fold import TERMINAL_ANSWERS, Reconstruction
from acp_proxy.reconstruct.terminals import Terminal
from acp_proxy.reconstruct.tools import ToolCall
from acp_proxy.reconstruct.updates import FILES, TERMINALS, TOOL_UPDATES, TOOLS, Key
from acp_proxy.reconstruct.views import change_json, terminal_json, tool_json
from acp_proxy.reconstruct.wire import RpcMessage, StoredPairs

__all__ = [
    "FOLDED",
    "PARTS",
    "SELECTIONS",
    "Hints",
    "NotStreamable",
    "Row",
    "Selection",
    "fold_selected",
    "selection_of",
    "stream_view",
    "text_selection",
]

# seq, how, t_ns, raw, request_seq (on a response); ``how`` is 0 (client to agent), 1 (agent
# to client) or 2: a batch, or a frame the recorder's fields do not describe for certain
Row = tuple[int, int, int, bytes, int | None]
_HOW = (Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT)
_ODD = 2


class NotStreamable(Exception):
    """The view cannot be shown exactly from the frames chosen for it: fold every frame."""


@dataclass(frozen=True, slots=True)
class Selection:
    """The frames a view needs: requests and notifications by ``method``; requests whose
    answers it reads, and those answers (``answered``: an answer's method is its
    request's); ``session/update`` by kind, all of them (``kinds``) or those whose bytes
    hold one of ``markers`` (``marked``)."""

    methods: frozenset[str]
    answered: frozenset[str]
    kinds: frozenset[str] = frozenset()
    marked: frozenset[str] = frozenset()
    markers: tuple[bytes, ...] = ()


_SETUP = frozenset({"initialize", "session/new", "session/fork", "session/load", "session/resume"})
_ESCAPE = b"\\u"  # a JSON string may spell any character as \uXXXX
SELECTIONS = {
    "tools": Selection(
        frozenset({"session/request_permission", "tool_call/cancel"}), _SETUP, kinds=TOOL_UPDATES
    ),
    "terminals": Selection(
        frozenset({"terminal/kill", "terminal/release", "terminal/cancel"}),
        _SETUP | TERMINAL_ANSWERS | {"terminal/create"},
        kinds=frozenset({"terminal_update", "terminal_output_chunk"}),
        marked=TOOL_UPDATES,
        markers=(b'"terminal"', _ESCAPE),
    ),
    "diffs": Selection(
        frozenset(),
        _SETUP | {"fs/read_text_file", "fs/write_text_file"},
        marked=TOOL_UPDATES,
        markers=(b'"diff"', _ESCAPE),
    ),
}
PARTS = {"tools": TOOLS, "terminals": TERMINALS, "diffs": FILES}
"""The part of a reconstruction each view shows."""
FOLDED = {
    "files": (frozenset({FILES}), SELECTIONS["diffs"]),
    "mcp": (frozenset[str](), Selection(MCP_METHODS, MCP_METHODS)),
}
"""Views not written item by item but folded whole from the frames they need
(:func:`fold_selected`): the parts they keep and those frames. ``files`` reads what
``diffs`` reads (every version of a path comes from a change, a read or a write); the MCP
calls carried over ACP are their own requests, notifications and answers alone."""
_TICK = 4096  # rows between two calls of ``tick``


@dataclass(slots=True)
class Hints:
    """The last frame (``seq``) that names each tool call id (for ``tools``) and each
    terminal id (for ``terminals``), as the recorder's fields name them."""

    tools: dict[str, int] = field(default_factory=dict)
    terminals: dict[str, int] = field(default_factory=dict)


def stream_view(
    view: str,
    rows: Iterable[Row],
    hints: Hints,
    session: str | None = None,
    tick: Callable[[int], None] | None = None,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(position, item)`` for each item of ``view`` (``tools``, ``terminals``, ``diffs``)
    of session ``session`` (every session when ``None``), in the order they are finished;
    ``position`` is the item's place in the view. ``rows`` are the frames
    :data:`SELECTIONS` chose, in ``seq`` order; ``tick`` is given the ``seq`` reached, now
    and then. Raises :class:`NotStreamable`."""
    fold = _Streaming(view, hints, session)
    pairs = StoredPairs(SELECTIONS[view].answered)
    take, ask, due, changes, done = fold.take, fold.ask, fold.due, fold.files.changes, fold.done
    for n, (seq, how, t_ns, raw, request_seq) in enumerate(rows, 1):
        if how == _ODD:
            raise NotStreamable(f"frame {seq} is a batch or was not classified whole")
        try:
            m = pairs.message(seq, _HOW[how], t_ns, raw, request_seq)
        except ValueError as e:
            raise NotStreamable(str(e)) from e
        if m is not None:
            take(m)
            if m.kind == "request":
                ask(m)
        if (due and due[0][0] <= seq) or changes:
            fold.settle(seq)
            if done:
                yield from done
                done.clear()
        if tick is not None and n % _TICK == 0:
            tick(seq)
    yield from fold.finish()


def text_selection(view: str) -> Selection:
    """The frames the text of ``view`` needs: its JSON's, and for ``tools`` the MCP calls
    carried over ACP too (the text lists them after the tool calls)."""
    s = SELECTIONS[view]
    if view != "tools":
        return s
    return Selection(
        s.methods | MCP_METHODS, s.answered | MCP_METHODS, s.kinds, s.marked, s.markers
    )


def selection_of(view: str) -> Selection:
    """The frames :func:`fold_selected` folds for ``view``: one of :data:`PARTS` (its
    text's, :func:`text_selection`) or of :data:`FOLDED`."""
    return FOLDED[view][1] if view in FOLDED else text_selection(view)


def fold_selected(
    view: str, rows: Iterable[Row], tick: Callable[[int], None] | None = None
) -> Reconstruction:
    """The part of a reconstruction ``view`` (one of :data:`PARTS` or :data:`FOLDED`)
    shows, folded from the frames :func:`selection_of` chose (``rows``, in ``seq`` order)
    and kept whole: what the text of the view is made from, for the cost of its JSON, or
    the JSON of a view of :data:`FOLDED`. ``tick`` is given the ``seq`` reached, now and
    then. Raises :class:`NotStreamable` where the choice is not exact."""
    if view in FOLDED:  # the files view shows every version of a path: timelines kept
        r = Reconstruction(FOLDED[view][0])
    else:
        r = Reconstruction(frozenset({PARTS[view]}), timelines=False)
    pairs = StoredPairs(selection_of(view).answered)
    take, message = r.take, pairs.message
    for n, (seq, how, t_ns, raw, request_seq) in enumerate(rows, 1):
        if how == _ODD:
            raise NotStreamable(f"frame {seq} is a batch or was not classified whole")
        try:
            m = message(seq, _HOW[how], t_ns, raw, request_seq)
        except ValueError as e:
            raise NotStreamable(str(e)) from e
        if m is not None:
            take(m)
        if tick is not None and n % _TICK == 0:
            tick(seq)
    return r


class _Streaming(Reconstruction):
    """The fold of one view, which writes out items whose last frame has been folded."""

    def __init__(self, view: str, hints: Hints, session: str | None) -> None:
        super().__init__(frozenset({PARTS[view]}), timelines=False)
        self.done: list[tuple[int, dict[str, Any]]] = []
        self.due: list[tuple[int, int, Key]] = []  # (seq, position, key): a heap
        self._last = hints.tools if view == "tools" else hints.terminals
        self._session = session
        self._position: dict[Key, int] = {}
        self._count = 0
        self._gone_tools: set[Key] = set()
        self._gone_terminals: dict[Key, frozenset[str]] = {}  # with the tool calls it showed
        self._asked: dict[str, int] = {}  # terminal id: requests naming it not answered yet
        self._held: dict[str, list[tuple[int, Key]]] = {}  # due, but an answer is to come
        self._waiting: dict[int, FileChange] = {}  # fs writes not answered yet, by position

    # -- tool calls and terminals: written once their last frame is folded ---------------

    def _find_tool_call(self, key: Key) -> ToolCall | None:
        tc = self.tool_calls.get(key)
        if tc is None and key in self._gone_tools:
            raise NotStreamable(f"tool call {key[1]!r} changed after its last frame")
        return tc

    def _add_tool_call(self, key: Key, tc: ToolCall) -> None:
        super()._add_tool_call(key, tc)
        self._schedule(key)

    def _find_terminal(self, key: Key) -> Terminal | None:
        t = self.terminals.get(key)
        if t is None and key in self._gone_terminals:
            raise NotStreamable(f"terminal {key[1]!r} changed after its last frame")
        return t

    def _add_terminal(self, key: Key, t: Terminal) -> None:
        super()._add_terminal(key, t)
        self._schedule(key)

    def _anchor(self, tc: ToolCall, tid: str, m: RpcMessage) -> None:
        # an update of a tool call may send its content again: an anchor the terminal
        # already had changes nothing, also once the terminal is written out
        if tc.tool_call_id not in self._gone_terminals.get((tc.session_id, tid), ()):
            super()._anchor(tc, tid, m)

    def _schedule(self, key: Key) -> None:
        self._position[key] = self._count
        last = self._last.get(key[1])
        if last is not None:  # else it is written at the end
            heapq.heappush(self.due, (last, self._count, key))
        self._count += 1

    def ask(self, m: RpcMessage) -> None:
        """A request folded: one whose answer will change a terminal keeps it open."""
        if self._keep_terminals and m.method in TERMINAL_ANSWERS:
            tid = m.params.get("terminalId")
            if isinstance(tid, str):
                self._asked[tid] = self._asked.get(tid, 0) + 1

    def _answered(self, request: RpcMessage, seq: int) -> None:
        tid = request.params.get("terminalId")
        if not isinstance(tid, str) or tid not in self._asked:
            return
        self._asked[tid] -= 1
        if not self._asked[tid]:
            del self._asked[tid]
            for position, key in self._held.pop(tid, ()):
                heapq.heappush(self.due, (seq, position, key))

    def settle(self, seq: int) -> None:
        """After the frame ``seq``: write out what it finished."""
        due = self.due
        while due and due[0][0] <= seq:
            _, position, key = heapq.heappop(due)
            if key[1] in self._asked and self._keep_terminals:
                self._held.setdefault(key[1], []).append((position, key))
            else:
                self._write(key)
        if self.files.changes:
            self._changes()

    def _write(self, key: Key) -> None:
        position = self._position.pop(key)
        if self._keep_tools:
            tc = self.tool_calls.pop(key)
            self._gone_tools.add(key)
            if self._session in (None, key[0]):
                self.done.append((position, tool_json(tc)))
        else:
            t = self.terminals.pop(key)
            self._gone_terminals[key] = frozenset(t.tool_call_ids)
            if self._session in (None, key[0]):
                self.done.append((position, terminal_json(t)))

    # -- file changes: final when made, a write once answered ----------------------------

    def _changes(self) -> None:
        for c in self.files.changes:
            if c.source == "fs_write" and c.ok is None:
                self._waiting[self._count] = c
            elif self._session in (None, c.session_id):
                self.done.append((self._count, change_json(c)))
            self._count += 1
        self.files.changes.clear()

    def _response(self, m: RpcMessage) -> None:
        super()._response(m)
        if m.request is not None and self._keep_terminals:
            self._answered(m.request, m.seq)
        if self._waiting and m.method == "fs/write_text_file":
            for position, c in list(self._waiting.items()):
                if c.ok is not None:
                    del self._waiting[position]
                    if self._session in (None, c.session_id):
                        self.done.append((position, change_json(c)))

    def finish(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """Every item still open when the frames ran out."""
        for key in list(self.tool_calls if self._keep_tools else self.terminals):
            self._write(key)
        self._changes()
        for position, c in self._waiting.items():
            if self._session in (None, c.session_id):
                self.done.append((position, change_json(c)))
        self._waiting.clear()
        yield from self.done
        self.done.clear()

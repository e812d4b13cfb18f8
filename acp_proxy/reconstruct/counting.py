"""What a fold does with an update it is handed without its bytes (pure, no I/O).

What belongs here: :class:`Counting`, the part of
:class:`~acp_proxy.reconstruct.updates.Fold` a reader drives from the fields the recorder
derived of a ``session/update`` alone (its session id and kind): the kinds a fold keeps
nothing of but where they fall (:attr:`Counting.counted`), counted; the message chunks,
from their update alone or with their text left in their frames, one at a time or a run of
them at once. Most of a large capture is these, and each is exactly what the fold of its
bytes does with it (the differential tests of the parts hold the two together).
"""

from __future__ import annotations

from typing import Any

from acp_proxy.reconstruct.history import Replay
from acp_proxy.reconstruct.kinds import CHUNKS, OUTPUT_UPDATES, role_of
from acp_proxy.reconstruct.kinds import TERMINAL_KINDS as _TERMINAL_KINDS
from acp_proxy.reconstruct.session import SessionState, Turn

__all__ = ["Counting"]


class Counting:
    """The updates a fold is handed from the recorder's fields (the state is the fold's)."""

    sessions: dict[str, SessionState]
    _open: dict[str, Turn]
    _replaying: dict[str, Replay]
    _keep_sessions: bool
    _keep_terminals: bool

    @property
    def counted(self) -> frozenset[str]:
        """The ``session/update`` kinds this fold keeps nothing of but where they fall: a
        reader may hand them to :meth:`count_update` unparsed (a terminal's output, unless
        terminals are kept, and the message chunks, unless sessions are: most of a large
        capture)."""
        counted = _TERMINAL_KINDS if not self._keep_terminals else frozenset()
        return counted if self._keep_sessions else counted | CHUNKS

    def count_update(self, sid: str, kind: str, seq: int, t_ns: int) -> None:
        """A ``session/update`` of one of the :attr:`counted` kinds (``sid`` its
        ``sessionId``, ``""`` when that is not text): what the fold of its bytes does with
        it."""
        replay = self._replaying.get(sid)
        turn = self._open.get(sid) if replay is None else None
        if replay is not None:
            replay.updates += 1
        if turn is not None:
            turn.updates += 1
            if turn.first_output_seq is None and kind in OUTPUT_UPDATES:
                turn.first_output_seq, turn.first_output_t_ns = seq, t_ns
        if self._keep_sessions:
            s = self.sessions.get(sid)
            if s is None:
                s = self.sessions[sid] = SessionState(sid, seq, t_ns)
            if replay is not None:
                s.history += 1

    def chunk_update(
        self, sid: str, kind: str, update: dict[str, Any] | None, seq: int, t_ns: int
    ) -> None:
        """A ``session/update`` of one of the :data:`CHUNKS` kinds (``update`` its
        ``params.update``, ``sid`` its ``sessionId`` or ``""``): what the fold of its bytes
        does with it, without making it a message first (most of a long turn is these). With
        ``update`` None its text is left in frame ``seq``: the turn it falls in holds the
        ``seq`` until it is read (:meth:`~acp_proxy.reconstruct.session.Turn.read_text`)."""
        turn = self._counting_turn(sid)
        if turn is not None:  # the common case: all count_update does is count it in its turn
            turn.updates += 1
            if turn.first_output_seq is None:  # a chunk is output (OUTPUT_UPDATES)
                turn.first_output_seq, turn.first_output_t_ns = seq, t_ns
        else:
            self.count_update(sid, kind, seq, t_ns)
            if not self._keep_sessions or sid in self._replaying:
                return
            turn = self._open.get(sid)
            if turn is None:
                return
        if update is None:
            turn.pending.append(seq)
            return
        turn.chunk(role_of(kind), update.get("messageId"), update.get("content"))

    def chunk_run(self, sid: str, kind: str, first: int, t_ns: int, n: int) -> None:
        """:meth:`chunk_update` of ``n`` frames one after the other, ``first`` to ``first +
        n - 1``, all of session ``sid`` and of ``kind``, their text left in the frames
        (``t_ns`` the first's time: past the first, no chunk of a run opens a session or
        is its turn's first output, so none reads its time). Most of a long capture is such
        runs, folded here in one step."""
        self.chunk_update(sid, kind, None, first, t_ns)
        if n < 2:
            return
        rest = range(first + 1, first + n)
        turn = self._counting_turn(sid)
        if turn is not None:  # chunk_update's common case, for the rest at once
            turn.updates += n - 1
            turn.pending.append(rest)
            return
        for seq in rest:
            self.chunk_update(sid, kind, None, seq, t_ns)

    def _counting_turn(self, sid: str) -> Turn | None:
        """The open turn of session ``sid`` when all a chunk of that session does is count
        in it and add its text: sessions kept, ``sid`` known, not replaying its history."""
        turn = self._open.get(sid)
        if turn is None or not self._keep_sessions or sid in self._replaying:
            return None
        return turn if sid in self.sessions else None

"""Replayed history: which updates describe the past (pure, no I/O).

What belongs here: :class:`Replay`, one history replay (docs/protocol.md §13.2) — a v1
``session/load``, or a v2 ``session/resume`` that carries ``replayFrom`` — from its request
to its end: the ``replay_complete`` marker (v2) or the response. Every update of the
replayed session in between, and of a child announced during the replay until its own
marker, is history: it belongs to no turn and is never counted as turn output. A replay
that ended with neither its marker nor a successful response is truncated; a v2 replay that
the response ended without a marker ended too early (``check`` says so).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Replay"]


@dataclass(slots=True)
class Replay:
    session_id: str
    method: str  # session/load or session/resume
    request_seq: int
    t_ns: int
    marked: bool  # v2 with replayFrom: ends at its replay_complete marker
    marker_seqs: list[int] = field(default_factory=list)
    response_seq: int | None = None
    ok: bool | None = None  # the response was a result (True) or an error (False)
    updates: int = 0
    children: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """The whole history arrived: the marker (v2), or a successful response (v1)."""
        return bool(self.marker_seqs) if self.marked else self.ok is True

    @property
    def truncated(self) -> bool:
        """Ended with neither a marker nor a successful response, or never ended."""
        return not self.marker_seqs and self.ok is not True

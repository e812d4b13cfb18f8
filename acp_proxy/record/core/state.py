"""What the recorder knows of each capture while it works (pure).

What belongs here: the state :class:`~acp_proxy.record.core.machine.Core` keeps per capture and per
stream (how far each stream has got, the line it is in the middle of, the requests still
open), what a recorder reads back from the database to carry on (:class:`Resume`), and the
JSON helpers for the values a capture's columns take.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from acp_proxy.protocol.frames import Direction
from acp_proxy.protocol.pairing import Pairing
from acp_proxy.record.core.wire import Stream

__all__ = [
    "RELAY_COLUMNS",
    "CaptureState",
    "Lookup",
    "Pending",
    "Resume",
    "StreamState",
    "capture_columns",
    "json_text",
    "load_object",
]


def json_text(value: Any) -> str:
    """Compact JSON text for a TEXT column, whatever ``value`` holds (a lone surrogate in a
    string becomes its ``\\\\u`` escape, an integer of any size its digits)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=str).decode()
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, ensure_ascii=True, separators=(",", ":"), default=str)


@dataclass(slots=True)
class Pending:
    """A request still unanswered when a recorder stopped, as read back from the database."""

    direction: str
    token: str
    seq: int
    t_ns: int
    method: str | None


@dataclass(slots=True)
class Resume:
    """Where a capture stands in the database, so another recorder can carry on exactly."""

    started_ns: int
    next_seq: int
    message_count: int
    rseq: int
    positions: dict[int, int] = field(default_factory=dict)  # Stream -> position reached
    pending: list[Pending] = field(default_factory=list)
    ended: bool = False


_POSITION_COLUMN: dict[int, str] = {
    Stream.C2A: "c2a_position",
    Stream.A2C: "a2c_position",
    Stream.STDERR: "stderr_position",
}

# A capture of this journal by its number: its uid and where the database stands.
Lookup = Callable[[int], tuple[str, Resume] | None]


class StreamState:
    """One stream of a capture: how far it has got, and the line it is in the middle of."""

    __slots__ = (
        "chunk_first_seq",
        "chunk_position",
        "ended",
        "parts",
        "pending_index",
        "pending_len",
        "pending_start",
        "position",
        "resumed",
        "split",
        "undelivered",
    )

    def __init__(self, position: int = 0) -> None:
        self.position = position  # the next byte (or message) expected
        self.parts: list[bytes] = []  # the unfinished line, as the pieces that brought it
        self.pending_len = 0
        self.pending_start = position
        self.pending_index: int | None = None  # input index of the first piece
        self.split = False  # the unfinished line went over max_frame and is being cut
        self.resumed = False  # the next frame starts after a hole, maybe mid-line
        self.undelivered = False
        self.ended = False
        self.chunk_first_seq: int | None = None
        self.chunk_position = -1

    def hold(self, data: bytes, position: int, index: int, limit: int) -> list[bytes]:
        """Keep ``data`` (at ``position``, from input ``index``) as part of the unfinished
        line; what goes over ``limit`` is cut off in pieces of ``limit`` bytes, returned in
        order, each to become a frame flagged ``split``."""
        if not data:
            return []
        if not self.parts:
            self.pending_start = position
            self.pending_index = index
        self.parts.append(data)
        self.pending_len += len(data)
        pieces = []
        while self.pending_len > limit:
            joined = b"".join(self.parts)
            piece, rest = joined[:limit], joined[limit:]
            self.parts, self.pending_len = [], 0
            pieces.append(piece)
            self.split = True
            self.pending_start += len(piece)
            self.pending_index = index
            if rest:
                self.parts, self.pending_len = [rest], len(rest)
        return pieces

    @property
    def committed(self) -> int:
        """The position up to which everything is in frames (the unfinished line is not)."""
        return self.pending_start if self.parts else self.position


class CaptureState:
    __slots__ = (
        "closed",
        "count",
        "fields",
        "last_t",
        "pairing",
        "rseq",
        "seq",
        "skip_rseq",
        "started_ns",
        "streams",
        "touched",
        "uid",
    )

    def __init__(self, uid: str, started_ns: int) -> None:
        self.uid = uid
        self.started_ns = started_ns
        self.seq = 0
        self.count = 0
        self.rseq = 0
        self.skip_rseq = 0  # records at or below this are in the database already
        self.streams: dict[int, StreamState] = {}
        self.pairing: Pairing[tuple[int, int, str | None]] = Pairing()
        self.fields: dict[str, Any] = {}
        self.touched = False
        self.closed = False
        self.last_t = started_ns

    @classmethod
    def resumed(cls, uid: str, state: Resume) -> CaptureState:
        """A capture the database already holds, carried on from where it stands."""
        cap = cls(uid, state.started_ns)
        cap.seq = state.next_seq
        cap.count = state.message_count
        cap.rseq = cap.skip_rseq = state.rseq
        cap.closed = state.ended
        for s, position in state.positions.items():
            cap.streams[s] = StreamState(position)
        for p in state.pending:
            cap.pairing.request(Direction(p.direction), p.token, (p.seq, p.t_ns, p.method))
        return cap

    def progress(self) -> dict[str, Any]:
        """The capture columns to write now: fields set since the last call (the private
        ``_`` ones stay), the frame count and how far each stream is in frames."""
        fields = {k: v for k, v in self.fields.items() if not k.startswith("_")}
        self.fields = {k: v for k, v in self.fields.items() if k.startswith("_")}
        fields["message_count"] = self.count
        fields["rseq"] = self.rseq
        for s, st in self.streams.items():
            column = _POSITION_COLUMN.get(s)
            if column is not None:
                fields[column] = st.committed
        return fields

    def stream(self, s: int) -> StreamState:
        st = self.streams.get(s)
        if st is None:
            st = self.streams[s] = StreamState()
        return st


def load_object(payload: bytes) -> dict[str, Any]:
    try:
        v = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return {}
    return v if isinstance(v, dict) else {}


# the capture columns a relay may set in its UPDATE and CLOSE records
RELAY_COLUMNS = frozenset(
    {
        "pid",
        "exit_code",
        "exit_signal",
        "ended_at",
        "ended_ns",
        "label",
        "end_reason",
        "upstream_url",
        "listen_url",
    }
)


def capture_columns(body: dict[str, Any]) -> dict[str, Any]:
    """The capture columns a relay may set, with values SQLite can hold."""
    out: dict[str, Any] = {}
    for k, v in body.items():
        if k not in RELAY_COLUMNS:
            continue
        if v is None or isinstance(v, str) or (v.__class__ is int and -(2**63) <= v < 2**63):
            out[k] = v
    return out

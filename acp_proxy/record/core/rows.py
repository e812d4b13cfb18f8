"""What the recorder core produces: typed rows for the database (pure values, no I/O).

What belongs here: the dataclasses :class:`~acp_proxy.record.core.machine.Core` returns and
:mod:`acp_proxy.record.sqlite` writes. Captures are named by ``uid``; the database layer maps
them to ids. Every field is already in a form SQLite can store (text is valid UTF-8,
integers fit 64 bits).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acp_proxy.protocol.jsonrpc import Info

__all__ = [
    "CaptureFields",
    "EventRow",
    "FrameRow",
    "GapRow",
    "ItemRow",
    "MarkRow",
    "OpenRow",
    "Row",
    "StderrRow",
]


@dataclass(slots=True)
class OpenRow:
    """A capture begins (or, with ``resume``, continues after its recorder restarted)."""

    uid: str
    meta: dict[str, Any]
    resume: bool = False


@dataclass(slots=True)
class FrameRow:
    """One frame. ``raw`` is the exact bytes; a long frame may come as ``parts`` to be
    written piece by piece instead (``raw`` is then empty)."""

    uid: str
    seq: int
    direction: str
    t_ns: int
    raw: bytes
    terminated: bool
    opcode: str | None
    info: Info
    anomalies: list[str]
    request_seq: int | None = None
    latency_ns: int | None = None
    parts: list[bytes] | None = None

    @property
    def size(self) -> int:
        return len(self.raw) if self.parts is None else sum(len(p) for p in self.parts)


@dataclass(slots=True)
class ItemRow:
    """One entry of a batch frame."""

    uid: str
    seq: int
    idx: int
    info: Info
    request_seq: int | None
    latency_ns: int | None


@dataclass(slots=True)
class StderrRow:
    uid: str
    t_ns: int
    data: bytes


@dataclass(slots=True)
class EventRow:
    uid: str
    t_ns: int
    kind: str
    detail: dict[str, Any] | None


@dataclass(slots=True)
class CaptureFields:
    """Capture columns to set (merged: the last value of each column wins)."""

    uid: str
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class GapRow:
    """Traffic that never reached the database, written down: which stream, the range of
    positions (bytes, or messages), how many frames that was when it is known, and why."""

    uid: str
    stream: str
    start: int
    end: int
    frames: int | None
    reason: str
    after_seq: int | None
    t_ns: int = 0


@dataclass(slots=True)
class MarkRow:
    """Add ``anomaly`` to frames ``first_seq`` … ``last_seq`` already emitted."""

    uid: str
    first_seq: int
    last_seq: int
    anomaly: str


Row = OpenRow | FrameRow | ItemRow | StderrRow | EventRow | CaptureFields | GapRow | MarkRow

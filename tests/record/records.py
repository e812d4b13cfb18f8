"""Journal records as a relay's tap writes them, fed to the recorder core for playbooks.

What belongs here: the inputs (a record of each type, ``Again`` for a re-read, ``Finish``
for a relay that died), the rows in short form, and :class:`RecorderDriver`, which keeps
stream positions and ``rseq`` as the tap keeps them (``tests/record/test_record_playbooks.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson
from support.playbook import Playbook

from acp_proxy.record.core.machine import Core
from acp_proxy.record.core.rows import (
    CaptureFields,
    EventRow,
    FrameRow,
    GapRow,
    ItemRow,
    MarkRow,
    OpenRow,
    Row,
    StderrRow,
)
from acp_proxy.record.core.wire import Record, Stream, Type

C2A, A2C, ERR = Stream.C2A, Stream.A2C, Stream.STDERR
ENDED_AT = "2026-12-03T10:00:00.000Z"

# -- inputs: what a relay writes to the journal ---------------------------------------------


@dataclass(frozen=True)
class Open:
    uid: str = "u1"


@dataclass(frozen=True)
class Chunk:
    stream: int
    data: bytes
    at: int | None = None  # a position other than where the stream is: a hole, or a re-read
    flags: int = 0


@dataclass(frozen=True)
class Msg:
    stream: int
    data: bytes
    flags: int = 0


@dataclass(frozen=True)
class Err:
    data: bytes


@dataclass(frozen=True)
class End:
    stream: int


@dataclass(frozen=True)
class Close:
    positions: dict[int, int] = field(default_factory=dict)  # beyond what was received


@dataclass(frozen=True)
class Lost:
    stream: int
    start: int
    end: int
    frames: int | None = None


@dataclass(frozen=True)
class Undelivered:
    stream: int
    position: int


@dataclass(frozen=True)
class Event:
    kind: str


@dataclass(frozen=True)
class Again:
    """The last ``n`` records read again, as after a recorder restart."""

    n: int


@dataclass(frozen=True)
class Finish:
    """The journal ended with no CLOSE: the relay died."""


@dataclass(frozen=True)
class Progress:
    """Not an input: the progress columns the last rows carried."""


# -- outputs: rows, short ------------------------------------------------------------------


@dataclass(frozen=True)
class Opened:
    uid: str


@dataclass(frozen=True)
class Frame:
    seq: int
    direction: str
    raw: bytes
    anomalies: tuple[str, ...] = ()
    answers: int | None = None  # the seq of the request this response answers
    terminated: bool = True
    opcode: str | None = None


@dataclass(frozen=True)
class Item:
    seq: int
    idx: int
    method: str | None
    answers: int | None = None


@dataclass(frozen=True)
class Stderr:
    data: bytes


@dataclass(frozen=True)
class Happened:
    kind: str


@dataclass(frozen=True)
class Gap:
    stream: str
    start: int
    end: int
    reason: str = "not received"
    frames: int | None = None
    after: int | None = None


@dataclass(frozen=True)
class Mark:
    first: int
    last: int
    anomaly: str


class Fields(dict[str, Any]):
    def __repr__(self) -> str:
        return f"Fields({', '.join(f'{k}={v!r}' for k, v in self.items())})"


PROGRESS = {"message_count", "rseq", "c2a_position", "a2c_position", "stderr_position"}


def short(row: Row) -> Any:
    if isinstance(row, FrameRow):
        raw = row.raw if row.parts is None else b"".join(row.parts)
        return Frame(row.seq, row.direction, raw, tuple(row.anomalies), row.request_seq,
                     row.terminated, row.opcode)  # fmt: skip
    if isinstance(row, ItemRow):
        return Item(row.seq, row.idx, row.info.method, row.request_seq)
    if isinstance(row, OpenRow):
        return Opened(row.uid)
    if isinstance(row, StderrRow):
        return Stderr(row.data)
    if isinstance(row, EventRow):
        return Happened(row.kind)
    if isinstance(row, GapRow):
        return Gap(row.stream, row.start, row.end, row.reason, row.frames, row.after_seq)
    if isinstance(row, MarkRow):
        return Mark(row.first_seq, row.last_seq, row.anomaly)
    raise AssertionError(f"a row this playbook does not know: {row!r}")


class RecorderDriver:
    """A :class:`Core` fed records the way a tap writes them: positions per stream, rseq."""

    def __init__(self, core: Core | None = None) -> None:
        self.core = core or Core()
        self.pos = {C2A: 0, A2C: 0, ERR: 0}
        self.rseq = 0
        self.t = 1_000
        self.fed: list[Record] = []
        self.progress: dict[str, Any] = {}

    def feed(self, item: Any) -> list[Any]:
        if isinstance(item, Progress):
            return [Fields(self.progress)]
        if isinstance(item, Again):
            for rec in self.fed[-item.n :]:
                self.core.feed(rec, len(self.fed))
        elif isinstance(item, Finish):
            self.core.finish(ENDED_AT)
        else:
            rec = self.record(item)
            self.fed.append(rec)
            self.core.feed(rec, len(self.fed))
        return self.rows(self.core.take())

    def rows(self, rows: list[Row]) -> list[Any]:
        out = []
        for row in rows:
            if isinstance(row, CaptureFields):
                self.progress = {k: v for k, v in row.fields.items() if k in PROGRESS}
                rest = {k: v for k, v in row.fields.items() if k not in PROGRESS}
                if rest:
                    out.append(Fields(rest))
            else:
                out.append(short(row))
        return out

    def record(self, item: Any) -> Record:
        if isinstance(item, Open):
            meta = {"uid": item.uid, "transport": "stdio", "started_ns": 1_000}
            return Record(Type.OPEN, 0, 0, 1, 0, 0, 1_000, orjson.dumps(meta))
        if isinstance(item, Chunk):
            at = self.pos[item.stream] if item.at is None else item.at
            self.pos[item.stream] = max(self.pos[item.stream], at + len(item.data))
            return self._rec(Type.CHUNK, item.stream, at, item.data, item.flags)
        if isinstance(item, Msg):
            self.pos[item.stream] += 1
            return self._rec(Type.MESSAGE, item.stream, self.pos[item.stream] - 1, item.data,
                             item.flags)  # fmt: skip
        if isinstance(item, Err):
            self.pos[ERR] += len(item.data)
            return self._rec(Type.STDERR, ERR, self.pos[ERR] - len(item.data), item.data)
        if isinstance(item, End):
            return self._rec(Type.END, item.stream, self.pos[item.stream])
        if isinstance(item, Close):
            positions = {str(int(s)): p for s, p in {**self.pos, **item.positions}.items()}
            body = {"exit_code": 0, "ended_ns": self.t + 5, "positions": positions}
            return self._rec(Type.CLOSE, 0, 0, orjson.dumps(body))
        if isinstance(item, Lost):
            body = {"start": item.start, "end": item.end, "frames": item.frames,
                    "reason": "journal full"}  # fmt: skip
            self.pos[item.stream] = max(self.pos[item.stream], item.end)
            return self._rec(Type.LOST, item.stream, item.start, orjson.dumps(body))
        if isinstance(item, Undelivered):
            return self._rec(Type.UNDELIVERED, item.stream, item.position)
        if isinstance(item, Event):
            return self._rec(Type.EVENT, 0, 0, orjson.dumps({"kind": item.kind}))
        raise AssertionError(f"an input this playbook does not know: {item!r}")

    def _rec(self, type_: int, stream: int, position: int, payload: bytes = b"",
             flags: int = 0) -> Record:  # fmt: skip
        self.rseq += 1
        self.t += 10
        return Record(type_, stream, flags, 1, self.rseq, position, self.t, payload)


def recorder() -> Playbook[Any]:
    return Playbook(RecorderDriver())

"""The recorder core as playbooks: journal records in, database rows out.

Each input is a record as a relay's tap writes it (``Chunk`` carries its stream position,
kept by the driver as the tap keeps it); each output a row of :mod:`acp_proxy.record.rows`
in a short form. Progress columns (message count, stream positions, ``rseq``) are left out
of ``Fields`` and read with ``Progress()``, so a script says only what a step changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson
from support.playbook import Playbook

from acp_proxy.record.core import Core
from acp_proxy.record.rows import (
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
from acp_proxy.record.wire import Flag, Record, Stream, Type

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


def rpc(text: str) -> bytes:
    return b'{"jsonrpc":"2.0",' + text.encode() + b"}"


INIT = rpc('"id":0,"method":"initialize","params":{"protocolVersion":1}')
INIT_OK = rpc('"id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"ag"}}')
PING = rpc('"id":1,"method":"_x/ping"')
PONG = rpc('"id":1,"result":{}')


# -- the playbooks -------------------------------------------------------------------------


def test_lines_are_cut_across_reads_numbered_in_arrival_order_and_paired() -> None:
    assert (
        recorder()
        >> Open()
        << Opened("u1")
        >> Chunk(C2A, INIT[:10])  # half a line: nothing yet
        >> Chunk(A2C, INIT_OK + b"\n")  # an answer can arrive before its request is whole
        << Frame(0, "a2c", INIT_OK, ("unpaired_response",))
        >> Chunk(C2A, INIT[10:] + b"\n" + PING + b"\n")
        << Frame(1, "c2a", INIT)
        << Frame(2, "c2a", PING)
        << Fields(protocol_version=1)  # the client's; no agent answer was paired with it
        >> Chunk(A2C, PONG + b"\n")
        << Frame(3, "a2c", PONG, answers=2)
        >> Progress()
        << Fields(message_count=4, rseq=0, c2a_position=122, a2c_position=119)
    )


def test_initialize_teaches_the_version_and_the_peers() -> None:
    assert (
        recorder()
        >> Open()
        << Opened("u1")
        >> Chunk(C2A, INIT + b"\n")
        << Frame(0, "c2a", INIT)
        << Fields(protocol_version=1)
        >> Chunk(A2C, INIT_OK + b"\n")
        << Frame(1, "a2c", INIT_OK, answers=0)
        << Fields(protocol_version=1, agent_info='{"name":"ag"}')
    )


def test_a_hole_in_a_stream_is_a_gap_and_the_line_it_cut_is_kept_flagged() -> None:
    assert (
        recorder()
        >> Open()
        << Opened("u1")
        >> Chunk(C2A, PING[:8])
        >> Chunk(C2A, b"tail of a lost line\n" + PING + b"\n", at=100)
        << Frame(0, "c2a", PING[:8], ("not_json", "truncated"), terminated=False)
        << Gap("c2a", 8, 100, after=0)
        << Frame(1, "c2a", b"tail of a lost line", ("not_json", "resumed"))
        << Frame(2, "c2a", PING)
    )


def test_records_read_again_add_nothing() -> None:
    ping2 = rpc('"id":2,"method":"_x/ping"')
    assert (
        recorder()
        >> Open()
        << Opened("u1")
        >> Chunk(C2A, PING + b"\n" + ping2[:5])
        << Frame(0, "c2a", PING)
        >> Err(b"warming up\n")
        << Stderr(b"warming up\n")
        >> Again(2)  # a recorder that starts over reads from its last commit
        >> Open()  # the same capture opened again is the same capture
        >> Chunk(C2A, ping2[5:] + b"\n")
        << Frame(1, "c2a", ping2)
    )


def test_a_relay_that_died_leaves_its_last_line_unterminated_and_the_capture_ended() -> None:
    half = b'{"jsonrpc":"2.0","method":"session/upd'
    assert (
        recorder()
        >> Open()
        << Opened("u1")
        >> Chunk(A2C, half)
        >> Finish()
        << Frame(0, "a2c", half, ("not_json", "unterminated"), terminated=False)
        << Fields(end_reason="proxy_gone", ended_at=ENDED_AT, ended_ns=10)
        >> Finish()  # closed already: nothing more
    )


def test_a_stream_that_ends_without_a_newline_keeps_its_last_line() -> None:
    assert (
        recorder()
        >> Open()
        << Opened("u1")
        >> Chunk(A2C, PONG + b"\r\n" + PONG)  # CRLF stays: the \r is part of the frame
        << Frame(0, "a2c", PONG + b"\r", ("crlf", "unpaired_response"))
        >> End(A2C)
        << Frame(1, "a2c", PONG, ("unterminated", "unpaired_response"), terminated=False)
    )


def test_a_close_that_says_more_was_sent_than_arrived_writes_the_gap() -> None:
    assert (
        recorder()
        >> Open()
        << Opened("u1")
        >> Chunk(C2A, PING + b"\n")
        << Frame(0, "c2a", PING)
        >> Close(positions={C2A: len(PING) + 1 + 500})
        << Gap("c2a", len(PING) + 1, len(PING) + 501, after=0)
        << Fields(exit_code=0, ended_ns=15, end_reason="closed")
    )


def test_what_the_journal_could_not_hold_is_a_counted_gap() -> None:
    assert (
        recorder()
        >> Open()
        << Opened("u1")
        >> Lost(A2C, 0, 4096, frames=12)
        << Gap("a2c", 0, 4096, "journal full", frames=12)
        >> Chunk(A2C, PONG + b"\n")
        << Frame(0, "a2c", PONG, ("resumed", "unpaired_response"))
        >> Lost(A2C, 0, 100)  # recorded already: nothing
    )


def test_websocket_messages_keep_their_opcode_and_flags() -> None:
    oversize = Flag.OVERSIZE | Flag.UNDELIVERED
    assert (
        recorder()
        >> Open()
        << Opened("u1")
        >> Msg(C2A, PING)
        << Frame(0, "c2a", PING, terminated=False, opcode="text")
        >> Msg(A2C, b"\x00\xff", Flag.BINARY)
        << Frame(1, "a2c", b"\x00\xff", ("binary",), terminated=False, opcode="binary")
        >> Msg(C2A, PING, Flag.TERMINATED)  # a bridge's stdio leg: a line that ended in \n
        << Frame(2, "c2a", PING, ("duplicate_request_id",), opcode="text")  # id 1 in flight
        >> Msg(C2A, b'{"method":"b', oversize)  # the first piece of a line over the limit
        << Frame(3, "c2a", b'{"method":"b', ("not_json", "split", "undelivered"), terminated=False)
    )


def test_bytes_the_peer_never_got_are_marked_undelivered() -> None:
    two = PING + b"\n" + rpc('"id":2,"method":"_x/ping"') + b"\n"
    assert (
        recorder()
        >> Open()
        << Opened("u1")
        >> Chunk(C2A, two)
        << Frame(0, "c2a", PING)
        << Frame(1, "c2a", rpc('"id":2,"method":"_x/ping"'))
        >> Undelivered(C2A, 0)  # writing that chunk to the agent failed
        << Mark(0, 1, "undelivered")
        >> Chunk(C2A, rpc('"id":3,"method":"_x/ping"') + b"\n")  # and everything after it
        << Frame(2, "c2a", rpc('"id":3,"method":"_x/ping"'), ("undelivered",))
    )


def test_batches_pair_entry_by_entry_and_a_null_id_error_answers_the_unreadable() -> None:
    batch = b'[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"n"}]'
    answer = b'[{"jsonrpc":"2.0","id":1,"result":{}}]'
    parse_error = rpc('"id":null,"error":{"code":-32700,"message":"Parse error"}')
    assert (
        recorder()
        >> Open()
        << Opened("u1")
        >> Chunk(C2A, batch + b"\n")
        << Item(0, 0, "a")
        << Item(0, 1, "n")
        << Frame(0, "c2a", batch, ("batch",))
        >> Chunk(A2C, answer + b"\n")
        << Item(1, 0, "a", answers=0)
        << Frame(1, "a2c", answer, ("batch",))
        >> Chunk(C2A, b"{oops\n")
        << Frame(2, "c2a", b"{oops", ("not_json",))
        >> Chunk(A2C, parse_error + b"\n")
        << Frame(3, "a2c", parse_error, ("null_id",), answers=2)
    )


def test_stderr_and_events_are_rows_of_their_own() -> None:
    assert (
        recorder()
        >> Open()
        << Opened("u1")
        >> Err(b"Traceback (most recent call last):\n")
        << Stderr(b"Traceback (most recent call last):\n")
        >> Event("agent_exit")
        << Happened("agent_exit")
        >> Err(b"\x1b[31mno newline")  # bytes as written: never cut into lines
        << Stderr(b"\x1b[31mno newline")
    )

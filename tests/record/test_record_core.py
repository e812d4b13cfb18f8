"""The recorder core as a playbook: records in, rows out — no threads, pipes or SQLite."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_proxy.record.core.machine import Core
from acp_proxy.record.core.rows import CaptureFields, FrameRow, GapRow, ItemRow, MarkRow, OpenRow
from acp_proxy.record.core.state import Pending, Resume
from acp_proxy.record.core.wire import Flag, Record, Stream, Type

C2A, A2C, ERR = Stream.C2A, Stream.A2C, Stream.STDERR


class Script:
    """Builds records the way a relay's tap does: per-stream positions, rseq."""

    def __init__(self, core: Core | None = None, number: int = 1, uid: str = "u1") -> None:
        self.core = core or Core()
        self.number = number
        self.uid = uid
        self.rseq = 0
        self.pos = {C2A: 0, A2C: 0, ERR: 0}
        self.t = 1_000

    def _rec(self, type_: Type, stream: int = 0, flags: int = 0, position: int = 0,
             payload: bytes = b"") -> Record:  # fmt: skip
        self.rseq += 1
        self.t += 10
        return Record(type_, stream, flags, self.number, self.rseq, position, self.t, payload)

    def open(self) -> Script:
        meta = {"uid": self.uid, "transport": "stdio", "started_ns": 1_000}
        self.core.feed(Record(Type.OPEN, 0, 0, self.number, 0, 0, 1_000, orjson.dumps(meta)))
        return self

    def chunk(self, stream: int, data: bytes, *, at: int | None = None) -> Script:
        position = self.pos[stream] if at is None else at
        self.core.feed(self._rec(Type.CHUNK, stream, 0, position, data))
        self.pos[stream] = position + len(data)
        return self

    def message(self, stream: int, data: bytes, flags: int = 0) -> Script:
        self.core.feed(self._rec(Type.MESSAGE, stream, flags, self.pos[stream], data))
        self.pos[stream] += 1
        return self

    def end(self, stream: int) -> Script:
        self.core.feed(self._rec(Type.END, stream, 0, self.pos[stream]))
        return self

    def close(self, **positions: int) -> Script:
        body = {"exit_code": 0, "ended_ns": self.t + 5}
        body["positions"] = {str(int(s)): p for s, p in self.pos.items()}
        for name, p in positions.items():
            body["positions"][str(int(Stream[name.upper()]))] = p
        self.core.feed(self._rec(Type.CLOSE, 0, 0, 0, orjson.dumps(body)))
        return self

    def take(self) -> list[object]:
        return self.core.take()


def frames(rows: list[object]) -> list[FrameRow]:
    return [r for r in rows if isinstance(r, FrameRow)]


def fields(rows: list[object]) -> dict[str, object]:
    out: dict[str, object] = {}
    for r in rows:
        if isinstance(r, CaptureFields):
            out.update(r.fields)
    return out


def test_lines_of_both_streams_are_numbered_in_arrival_order() -> None:
    s = Script().open()
    s.chunk(C2A, b'{"jsonrpc":"2.0","id":0,"method":"a"}\n{"jsonrpc":"2.0","me')
    s.chunk(A2C, b'{"jsonrpc":"2.0","id":0,"result":{}}\n')
    s.chunk(C2A, b'thod":"b"}\n')
    rows = s.take()
    fs = frames(rows)
    assert [(f.seq, f.direction, f.raw) for f in fs] == [
        (0, "c2a", b'{"jsonrpc":"2.0","id":0,"method":"a"}'),
        (1, "a2c", b'{"jsonrpc":"2.0","id":0,"result":{}}'),
        (2, "c2a", b'{"jsonrpc":"2.0","method":"b"}'),
    ]
    assert fs[1].request_seq == 0 and fs[1].info.method == "a"
    assert isinstance(rows[0], OpenRow)
    assert fields(rows)["message_count"] == 3
    assert fields(rows)["c2a_position"] == s.pos[C2A] and fields(rows)["a2c_position"] == 37


def test_pairing_is_per_direction_and_by_exact_id_token() -> None:
    s = Script().open()
    s.chunk(
        C2A, b'{"jsonrpc":"2.0","id":1,"method":"x"}\n{"jsonrpc":"2.0","id":"1","method":"y"}\n'
    )
    s.chunk(A2C, b'{"jsonrpc":"2.0","id":1,"method":"fs/read"}\n')
    s.chunk(A2C, b'{"jsonrpc":"2.0","id":"1","result":{}}\n{"jsonrpc":"2.0","id":1,"result":{}}\n')
    s.chunk(C2A, b'{"jsonrpc":"2.0","id":1,"result":{}}\n{"jsonrpc":"2.0","id":7,"result":{}}\n')
    fs = frames(s.take())
    got = [(f.seq, f.info.method, f.request_seq, f.anomalies) for f in fs[3:]]
    assert got == [
        (3, "y", 1, []),
        (4, "x", 0, []),
        (5, "fs/read", 2, []),
        (6, None, None, ["unpaired_response"]),
    ]


def test_batch_entries_pair_one_by_one_and_null_id_errors_answer_the_unreadable() -> None:
    s = Script().open()
    s.chunk(C2A, b'[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":2,"method":"b"}]\n')
    s.chunk(A2C, b'[{"jsonrpc":"2.0","id":2,"result":{}},{"jsonrpc":"2.0","id":1,"result":{}}]\n')
    s.chunk(C2A, b"not json\n")
    s.chunk(A2C, b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}\n')
    rows = s.take()
    items = [(r.seq, r.idx, r.info.method, r.request_seq) for r in rows if isinstance(r, ItemRow)]
    assert items == [(0, 0, "a", None), (0, 1, "b", None), (1, 0, "b", 0), (1, 1, "a", 0)]
    err = frames(rows)[3]
    assert err.request_seq == 2 and err.anomalies == ["null_id"]


def test_initialize_sets_version_and_peers_the_agent_answer_wins() -> None:
    s = Script().open()
    s.chunk(C2A, b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,'
                 b'"clientInfo":{"name":"ed"},"clientCapabilities":{"fs":{}}}}\n')  # fmt: skip
    s.chunk(
        A2C, b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"ag"}}}\n'
    )
    f = fields(s.take())
    assert f["protocol_version"] == 1
    assert f["client_info"] == '{"name":"ed"}' and f["agent_info"] == '{"name":"ag"}'
    assert f["client_capabilities"] == '{"fs":{}}'


def test_out_of_range_protocol_version_is_flagged_not_stored() -> None:
    s = Script().open()
    s.chunk(
        C2A,
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":18446744073709551615}}\n',
    )
    rows = s.take()
    assert "protocol_version" not in fields(rows)
    assert "bad_protocol_version" in frames(rows)[0].anomalies


def test_a_hole_in_a_stream_is_a_gap_with_its_exact_range() -> None:
    s = Script().open()
    s.chunk(A2C, b'{"a":1}\n{"b":')
    s.chunk(A2C, b'2}\n{"c":3}\n', at=100)  # bytes 13..99 never arrived
    rows = s.take()
    fs = frames(rows)
    assert [f.raw for f in fs] == [b'{"a":1}', b'{"b":', b"2}", b'{"c":3}']
    assert "truncated" in fs[1].anomalies and "resumed" in fs[2].anomalies
    (gap,) = [r for r in rows if isinstance(r, GapRow)]
    assert (gap.stream, gap.start, gap.end, gap.after_seq) == ("a2c", 13, 100, 1)


def test_records_already_seen_are_skipped_so_imports_are_idempotent() -> None:
    s = Script().open()
    s.chunk(C2A, b'{"a":1}\n{"b"')
    s.chunk(C2A, b'{"a":1}\n{"b":2}\n', at=0)  # the same bytes again, and more
    fs = frames(s.take())
    assert [f.raw for f in fs] == [b'{"a":1}', b'{"b":2}']


def test_a_capture_the_journal_opened_earlier_carries_on_from_the_database() -> None:
    # a recorder that starts part way through a journal (the last one stopped) finds the
    # capture by its number, and carries on where the database stands
    state = Resume(
        started_ns=1_000,
        next_seq=5,
        message_count=5,
        rseq=9,
        positions={C2A: 40, A2C: 0},
        pending=[Pending("c2a", "3", 4, 500, "session/prompt")],
    )
    core = Core(lookup=lambda n: ("u1", state) if n == 1 else None)
    s = Script(core)
    s.rseq = 9
    s.chunk(C2A, b'{"x":0}\n', at=32)  # 32..39 in the database already
    s.chunk(C2A, b'{"y":1}\n', at=40)
    s.chunk(A2C, b'{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}\n')
    rows = s.take()
    assert not any(isinstance(r, OpenRow) for r in rows)
    fs = frames(rows)
    assert [(f.seq, f.raw) for f in fs][:1] == [(5, b'{"y":1}')]
    assert fs[1].request_seq == 4 and fs[1].info.method == "session/prompt"
    assert fields(rows)["message_count"] == 7


def test_close_writes_down_bytes_the_recorder_never_got() -> None:
    s = Script().open()
    s.chunk(A2C, b"abc\n")
    s.close(a2c=10)
    rows = s.take()
    (gap,) = [r for r in rows if isinstance(r, GapRow)]
    assert (gap.start, gap.end) == (4, 10)
    assert fields(rows)["end_reason"] == "closed" and fields(rows)["ended_ns"] == 15


def test_end_of_input_closes_what_the_relay_did_not() -> None:
    s = Script().open()
    s.chunk(A2C, b"half a line")
    s.core.finish("2026-12-03T00:00:00.000Z")
    rows = s.take()
    (f,) = frames(rows)
    assert f.raw == b"half a line" and f.anomalies == ["not_json", "unterminated"]
    assert not f.terminated
    assert fields(rows)["end_reason"] == "proxy_gone"


def test_a_relay_that_died_in_silence_lived_until_its_end_was_seen() -> None:
    # the end is seen 5 s after the last record: the capture lasted until then; an end
    # "seen" before the last record (a clock read early) never shortens it
    for noticed in (5_000_000_000, -5):
        s = Script().open()  # the capture starts at 1_000
        s.chunk(A2C, b"{}\n")
        last = s.t
        s.core.finish("2026-12-03T00:00:00.000Z", noticed_ns=last + noticed)
        assert fields(s.take())["ended_ns"] == max(last, last + noticed) - 1_000


def test_undelivered_marks_the_frames_of_the_failed_write_and_what_follows() -> None:
    s = Script().open()
    s.chunk(C2A, b"a\n")
    s.chunk(C2A, b"b\nc\n")
    s.core.feed(s._rec(Type.UNDELIVERED, C2A, 0, 2))
    s.chunk(C2A, b"d\n")
    rows = s.take()
    (mark,) = [r for r in rows if isinstance(r, MarkRow)]
    assert (mark.first_seq, mark.last_seq, mark.anomaly) == (1, 2, "undelivered")
    assert frames(rows)[-1].anomalies == ["not_json", "undelivered"]


def test_messages_keep_opcode_and_bridge_line_ends() -> None:
    s = Script().open()
    s.message(C2A, b'{"jsonrpc":"2.0","method":"x"}', Flag.TERMINATED)
    s.message(A2C, b"\x00\xff", Flag.BINARY)
    s.message(A2C, b"a piece", Flag.OVERSIZE)
    fs = frames(s.take())
    assert [(f.opcode, f.terminated, f.anomalies) for f in fs] == [
        ("text", True, []),
        ("binary", False, ["binary"]),
        (None, False, ["not_json", "split"]),
    ]


def test_a_line_over_the_limit_is_cut_into_pieces() -> None:
    s = Script(Core(max_frame=4)).open()
    s.chunk(A2C, b"abcdefghij\nxy\n")
    fs = frames(s.take())
    assert [(f.raw, f.terminated, "split" in f.anomalies) for f in fs] == [
        (b"abcd", False, True),
        (b"efgh", False, True),
        (b"ij", True, False),
        (b"xy", True, False),
    ]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([C2A, A2C]),
            st.binary(max_size=40) | st.sampled_from([b"\n", b"\r\n", b'{"id":1}\n', b"\n\n"]),
        ),
        max_size=30,
    ),
    st.booleans(),
)
def test_frames_rebuild_each_stream_exactly_for_any_chunking(
    script: list[tuple[Stream, bytes]], end: bool
) -> None:
    s = Script(Core(max_frame=16)).open()
    for stream, data in script:
        s.chunk(stream, data)
    if end:
        s.end(C2A).end(A2C)
    else:
        s.core.finish("now")
    rows = s.take()
    fs = frames(rows)
    assert [f.seq for f in fs] == list(range(len(fs)))
    for stream, name in ((C2A, "c2a"), (A2C, "a2c")):
        rebuilt = b"".join(
            f.raw + (b"\n" if f.terminated else b"") for f in fs if f.direction == name
        )
        assert rebuilt == b"".join(d for st_, d in script if st_ == stream)


def test_a_huge_line_stays_in_its_pieces_and_is_skimmed() -> None:
    from acp_proxy.protocol.skim import SKIM_ABOVE

    line = b'{"jsonrpc":"2.0","method":"big","params":{"sessionId":"s","blob":"'
    line += b"x" * SKIM_ABOVE + b'"}}'
    s = Script().open()
    for i in range(0, len(line), 1 << 20):
        s.chunk(A2C, line[i : i + (1 << 20)])
    s.chunk(A2C, b"\n")
    (f,) = frames(s.take())
    assert f.parts is not None and b"".join(f.parts) == line and f.size == len(line)
    assert (f.info.method, f.info.session_id, f.terminated) == ("big", "s", True)
    assert "skimmed" in f.anomalies

"""The writer thread, in process, on real SQLite files."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from conftest import db_rows
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_proxy.protocol.frames import Direction, Opcode
from acp_proxy.record.writer import CaptureMeta, Writer, _ByteQueue
from acp_proxy.store.reader import Store

C2A, A2C = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT


def _record(db: Path, script: list[tuple[Direction, bytes]]) -> None:
    w = Writer(db)
    tap = w.open_capture(CaptureMeta(agent_command=["x"]))
    for direction, data in script:
        tap.chunk(direction, data)
    tap.close(exit_code=0)
    w.close()


def test_pairing_is_per_direction_and_by_exact_id(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    _record(
        db,
        [
            (C2A, b'{"jsonrpc":"2.0","id":0,"method":"session/prompt","params":{}}\n'),
            (A2C, b'{"jsonrpc":"2.0","id":0,"method":"fs/read_text_file","params":{}}\n'),
            (C2A, b'{"jsonrpc":"2.0","id":0,"result":{"content":"x"}}\n'),  # answers the agent
            (
                C2A,
                b'{"jsonrpc":"2.0","id":"1","method":"a"}\n{"jsonrpc":"2.0","id":1,"method":"b"}\n',
            ),
            (
                A2C,
                b'{"jsonrpc":"2.0","id":1,"result":{}}\n{"jsonrpc":"2.0","id":"1","result":{}}\n',
            ),
            (A2C, b'{"jsonrpc":"2.0","id":0,"result":{"stopReason":"end_turn"}}\n'),
            (A2C, b'{"jsonrpc":"2.0","id":99,"result":{}}\n'),  # no such request
        ],
    )
    rows = db_rows(
        db,
        "SELECT seq, direction, kind, method, msg_id, request_seq, anomalies "
        "FROM messages ORDER BY seq",
    )
    by_seq = {r[0]: r for r in rows}
    assert by_seq[2][5] == 1 and by_seq[2][3] == "fs/read_text_file"
    assert by_seq[5][5] == 4 and by_seq[5][3] == "b"  # 1 answers the request with id 1
    assert by_seq[6][5] == 3 and by_seq[6][3] == "a"  # "1" answers the request with id "1"
    assert by_seq[7][5] == 0 and by_seq[7][3] == "session/prompt"
    assert by_seq[8][5] is None and "unpaired_response" in by_seq[8][6]
    ((latency,),) = db_rows(db, "SELECT latency_ms FROM requests WHERE seq = 0")
    assert latency is not None and latency >= 0


def test_batch_entries_are_indexed_and_paired(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    _record(
        db,
        [
            (
                C2A,
                b'[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":2,"method":"b"},'
                b'{"jsonrpc":"2.0","method":"n"}]\n',
            ),
            (A2C, b'[{"jsonrpc":"2.0","id":2,"result":{}},{"jsonrpc":"2.0","id":1,"result":{}}]\n'),
        ],
    )
    items = db_rows(
        db, "SELECT seq, idx, kind, method, msg_id, request_seq FROM batch_items ORDER BY seq, idx"
    )
    assert items == [
        (0, 0, "request", "a", "1", None),
        (0, 1, "request", "b", "2", None),
        (0, 2, "notification", "n", None, None),
        (1, 0, "response", "b", "2", 0),
        (1, 1, "response", "a", "1", 0),
    ]


def test_initialize_fills_the_capture(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    _record(
        db,
        [
            (
                C2A,
                b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,'
                b'"info":{"name":"ed","version":"1"},"capabilities":{}}}\n',
            ),
            (
                A2C,
                b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"info":{"name":"ag",'
                b'"version":"2"},"capabilities":{"session":{}}}}\n',
            ),
        ],
    )
    s = Store(db)
    c = s.capture(None)
    assert c["protocol_version"] == 2
    assert '"ed"' in c["client_info"] and '"ag"' in c["agent_info"]
    assert c["message_count"] == 2 and c["exit_code"] == 0 and c["ended_at"]
    s.close()


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([C2A, A2C]),
            st.binary(max_size=60) | st.sampled_from([b"\n", b"\r\n", b'{"id":1}']),
        ),
        max_size=40,
    )
)
def test_recorded_bytes_equal_the_stream_for_any_chunking(
    tmp_path: Path, script: list[tuple[Direction, bytes]]
) -> None:
    db = tmp_path / "prop.sqlite"
    _record(db, script)
    s = Store(db)
    c = s.capture(None)
    for d in (C2A, A2C):
        assert s.stream_bytes(c["id"], d) == b"".join(b for dd, b in script if dd is d)
    seqs = [f.seq for f in s.frames(c["id"])]
    assert seqs == list(range(len(seqs)))
    s.close()


def test_websocket_messages_keep_their_opcode(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    w = Writer(db)
    tap = w.open_capture(CaptureMeta(transport="ws"))
    tap.message(C2A, b'{"jsonrpc":"2.0","method":"x"}\n', Opcode.TEXT)
    tap.message(A2C, b"\x00\xff binary", Opcode.BINARY)
    tap.close()
    w.close()
    rows = db_rows(db, "SELECT raw, opcode, terminated, kind, anomalies FROM messages ORDER BY seq")
    assert rows == [
        (b'{"jsonrpc":"2.0","method":"x"}\n', "text", 0, "notification", "whitespace"),
        (b"\x00\xff binary", "binary", 0, "invalid", "binary"),
    ]


def test_queue_applies_backpressure_instead_of_dropping() -> None:
    q = _ByteQueue(capacity=10)
    q.put(("a",), 8)
    done = threading.Event()

    def producer() -> None:
        q.put(("b",), 8)  # does not fit: must wait for the consumer
        done.set()

    t = threading.Thread(target=producer)
    t.start()
    time.sleep(0.1)
    assert not done.is_set() and q.waits == 1
    assert q.get_all(timeout=1) == [("a",)]
    t.join(timeout=5)
    assert done.is_set()
    assert q.get_all(timeout=1) == [("b",)]


def test_a_single_item_larger_than_the_queue_still_passes() -> None:
    q = _ByteQueue(capacity=4)
    q.put(("big",), 100)
    assert q.get_all(timeout=1) == [("big",)]


def test_null_id_errors_answer_the_frame_the_peer_could_not_read(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    _record(
        db,
        [
            (C2A, b"this is not json\n"),
            (A2C, b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}\n'),
            (A2C, b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"?"}}\n'),
        ],
    )
    rows = db_rows(db, "SELECT seq, request_seq, anomalies FROM messages ORDER BY seq")
    assert rows[1][1] == 0 and rows[1][2] == "null_id"
    assert rows[2][1] is None and rows[2][2] == "null_id"  # nothing left for it to answer

"""The frame inserts: every shape of statement, in one batch, lands exactly and in order."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from acp_proxy.protocol.jsonrpc import classify
from acp_proxy.record.core.rows import FrameRow, OpenRow
from acp_proxy.record.sqlite import Database

NOTE = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s"}}'
CHUNK = (
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":'
    b'{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}'
)
ASK = b'{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s"}}'


def _row(
    seq: int,
    raw: bytes,
    opcode: str | None,
    parts: list[bytes] | None = None,
    *,
    direction: str = "c2a",
    terminated: bool | None = None,
) -> FrameRow:
    info = classify(raw if parts is None else b"".join(parts))
    ended = opcode is None if terminated is None else terminated
    return FrameRow("u1", seq, direction, seq * 10, raw, ended, opcode, info,
                    info.anomalies, parts=parts)  # fmt: skip


def test_runs_of_every_shape_keep_their_values_and_the_order(tmp_path: Path) -> None:
    # lean (a stdio notification), lean with the text opcode as a constant, full (an id, a
    # binary message, an anomaly), and a frame written piece by piece, interleaved; 120
    # lean ones in a row, more than one 50-row statement holds
    rows = [_row(0, NOTE, None), _row(1, NOTE, "text"), _row(2, ASK, "text")]
    rows += [_row(3 + i, NOTE, None) for i in range(120)]
    rows += [_row(123, b"\x00\xff", "binary"), _row(124, NOTE, "text"), _row(125, b"x", None)]
    rows += [_row(126, b"", None, parts=[NOTE[:20], NOTE[20:]]), _row(127, NOTE, "text")]
    # a plain session/update, terminated, each direction and opcode: all but six columns
    # are constants of its statement
    for d in ("c2a", "a2c"):
        for opcode in (None, "text"):
            rows += [_row(len(rows) + i, CHUNK, opcode, direction=d, terminated=True)
                     for i in range(3)]  # fmt: skip
    db = Database(tmp_path / "r.sqlite")
    db.write([OpenRow("u1", {"uid": "u1", "transport": "ws"}), *rows])
    db.close()
    conn = sqlite3.connect(tmp_path / "r.sqlite")
    got = conn.execute(
        "SELECT seq, t_ns, raw, terminated, opcode, kind, method, msg_id, anomalies, direction, "
        "size, session_id, update_kind FROM messages ORDER BY id"
    ).fetchall()
    expected = [
        (
            r.seq,
            r.t_ns,
            r.raw if r.parts is None else b"".join(r.parts),
            1 if r.terminated else 0,
            r.opcode,
            r.info.kind,
            r.info.method,
            r.info.id,
            ",".join(r.anomalies) or None,
            r.direction,
            r.size,
            r.info.session_id,
            r.info.update_kind,
        )
        for r in rows
    ]
    assert got == expected  # rowid order is seq order
    assert [g[4] for g in got[:3]] == [None, "text", "text"] and got[2][7] == "7"

"""Peer content is hostile: any JSON value in any field the recorder reads, both ways.

Arbitrary values — lone surrogates, integers far beyond 64 bits, floats, NaN, nested
objects and arrays, NUL, bytes that are not UTF-8 — go into every field position the
classifier and the recorder look at, through the real recorder into a real database, and
through the WebSocket listener. Nothing may stop the recording, and the stored bytes are
exactly the bytes sent.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.proc import PROXY, db_rows, run_proxy, wait_recorded
from support.ws import RAW, running_proxy
from websockets.asyncio.client import connect

from acp_proxy.protocol.frames import Direction
from acp_proxy.record.link import CaptureMeta, RecorderLink
from acp_proxy.store.reader import Store

C2A, A2C = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT

# A value JSON can carry, and a few it should not but peers send anyway.
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.sampled_from([2**63, 2**64 - 1, -(2**63) - 1, 10**40])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(["\ud800", "\udfff", "a\udcffb", "\x00", "\x1b]52;c;eA==\x07", ""])
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)

# Where the recorder looks: a path into the message, and what a well-behaved peer sends.
FIELDS = [
    ("method",),
    ("id",),
    ("params", "sessionId"),
    ("params", "toolCallId"),
    ("params", "terminalId"),
    ("params", "protocolVersion"),
    ("params", "clientInfo"),
    ("params", "info"),
    ("params", "clientCapabilities"),
    ("params", "update"),
    ("params", "update", "sessionUpdate"),
    ("params", "update", "toolCallId"),
    ("params", "update", "terminalId"),
    ("params", "toolCall", "toolCallId"),
    ("params", "subject", "toolCallId"),
    ("params", "subject", "terminalId"),
    ("result",),
    ("result", "sessionId"),
    ("result", "terminalId"),
    ("result", "protocolVersion"),
    ("result", "agentInfo"),
    ("result", "agentCapabilities"),
    ("error",),
    ("error", "code"),
    ("params",),
]
BASES = [
    {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}},
    {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1, "agentInfo": {"name": "a"}}},
    {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "s", "update": {"sessionUpdate": "tool_call"}},
    },
    {"jsonrpc": "2.0", "id": 3, "error": {"code": -32600, "message": "x"}},
    {"jsonrpc": "2.0", "id": 4, "method": "session/request_permission", "params": {}},
]


def _put(message: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = message
    for key in path[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    node[path[-1]] = value


def encode(message: Any) -> bytes:
    """JSON text as a hostile peer may write it: lone surrogates as ``\\u`` escapes (what
    ``ensure_ascii`` does), integers of any size, NaN as a literal."""
    return json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode("ascii")


@st.composite
def hostile_line(draw: st.DrawFn) -> bytes:
    message = json.loads(json.dumps(draw(st.sampled_from(BASES))))
    for path in draw(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=4)):
        _put(message, path, draw(values))
    raw = encode(message)
    if draw(st.booleans()):  # bytes that are not UTF-8, inside a string or anywhere
        at = draw(st.integers(0, len(raw)))
        raw = (
            raw[:at]
            + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00"]))
            + raw[at:]
        )
    return raw  # fmt: skip


streams = st.lists(st.tuples(st.sampled_from([C2A, A2C]), hostile_line()), min_size=1, max_size=12)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(script=streams)
def test_any_value_in_any_field_is_recorded_exactly(tmp_path: Path, script: list[Any]) -> None:
    db = tmp_path / f"h{os.urandom(4).hex()}.sqlite"
    warnings: list[str] = []
    link = RecorderLink(db, in_process=True, warn=warnings.append)
    tap = link.open_capture(CaptureMeta(agent_command=["hostile"]))
    for direction, line in script:
        tap.chunk(direction, line + b"\n")
    tap.close(exit_code=0)
    link.close()
    assert warnings == []
    store = Store(db)
    try:
        c = store.capture(None)
        for d in (C2A, A2C):
            want = b"".join(line + b"\n" for dd, line in script if dd is d)
            assert store.stream_bytes(c["id"], d) == want
        assert c["message_count"] == len(script) and c["end_reason"] == "closed"
        assert [f.seq for f in store.frames(c["id"])] == list(range(len(script)))
    finally:
        store.close()


def test_the_reported_surrogate_frame_does_not_lose_the_capture(tmp_path: Path) -> None:
    db = tmp_path / "z.sqlite"
    lines = (
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n'
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"\\udfff","update":'
        b'{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}\n'
        b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"clientInfo":{"name":"\\ud800"},'
        b'"protocolVersion":18446744073709551615}}\n'
    )
    result = run_proxy(db, ["cat"], lines)
    assert result.returncode == 0 and result.stdout == lines and result.stderr == b""
    rows = db_rows(db, "SELECT session_id, anomalies FROM messages WHERE seq = 1")
    assert rows == [("\\udfff", "lone_surrogate,escaped_text")]
    ((count, reason),) = db_rows(db, "SELECT message_count, end_reason FROM captures")
    assert (count, reason) == (6, "closed")
    listing = subprocess.run([*PROXY, "captures", "--db", str(db)], capture_output=True, check=True)
    assert b"exit 0" in listing.stdout


async def test_hostile_websocket_clients_neither_stop_nor_stall_the_listener(
    tmp_path: Path,
) -> None:
    db = tmp_path / "ws.sqlite"
    hostile = [
        encode(m)
        for m in [
            {"jsonrpc": "2.0", "method": "\ud800", "params": {"sessionId": "\udfff"}},
            {"jsonrpc": "2.0", "id": 2**64 - 1, "method": "initialize",
             "params": {"protocolVersion": 2**64, "clientInfo": {"name": "\udc00"}}},
            {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": ["x"], "terminalId": {"a": 1}}},
        ]
    ] + [b"\xff\xfe not utf-8", b"[" * 5000 + b"]" * 5000]  # fmt: skip
    agent = [
        os.sys.executable,
        "-c",
        "import sys\nfor l in sys.stdin.buffer: sys.stdout.buffer.write(l); sys.stdout.flush()",
    ]  # type: ignore[attr-defined]
    async with running_proxy(db, command=agent) as proxy:

        async def send_all(messages: list[bytes]) -> list[bytes]:
            async with connect(proxy.url + "/acp", **RAW) as ws:
                got = []
                for m in messages:
                    await ws.send(m, text=True)
                    got.append(await asyncio.wait_for(ws.recv(decode=False), 30))
                return got

        calm = [b'{"jsonrpc":"2.0","method":"calm","params":{"n":%d}}' % i for i in range(20)]
        bad, good = await asyncio.gather(send_all(hostile), send_all(calm))
        assert good == calm  # the other connection went on meanwhile
        assert bad == hostile
        # and a new client can still connect after them
        assert await send_all(calm[:1]) == calm[:1]
    wait_recorded(db)
    conn = sqlite3.connect(db)
    try:
        by_capture = conn.execute(
            "SELECT capture_id, COUNT(*) FROM messages GROUP BY capture_id ORDER BY capture_id"
        ).fetchall()
        assert sorted(n for _, n in by_capture) == [2, 2 * len(hostile), 40]
        stored = {bytes(r) for (r,) in conn.execute("SELECT raw FROM messages")}
        assert set(hostile) <= stored
    finally:
        conn.close()

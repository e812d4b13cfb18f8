"""``export --format har``: a capture as browsers' developer tools write a WebSocket.

A WebSocket capture through the real listener (handshake, text and binary messages both
ways) and a stdio capture (one pseudo-entry) are checked against the required fields of
HAR 1.2 and the ``_webSocketMessages`` extension; the messages carry the exact payloads.
A WebSocket capture also survives export → import → export byte for byte.
"""

from __future__ import annotations

import base64
import io
import json
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from support.proc import PROXY
from support.ws import RAW, running_proxy
from websockets.asyncio.client import connect

from acp_proxy.demo import run_demo
from acp_proxy.export.har import write_har
from acp_proxy.protocol.frames import Direction, Frame, Opcode
from acp_proxy.store.reader import StoredFrame

ECHO = [
    sys.executable,
    "-c",
    "import sys\nfor line in sys.stdin.buffer:\n"
    "    sys.stdout.buffer.write(line); sys.stdout.buffer.flush()",
]


def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*PROXY, *args], capture_output=True, timeout=120)


def _check_har(har: dict[str, Any]) -> dict[str, Any]:
    """The required members of HAR 1.2 (log, creator, entries, request, response, cache,
    timings) and of the WebSocket extension; returns the one entry."""
    log = har["log"]
    assert log["version"] == "1.2" and isinstance(log["creator"]["name"], str)
    assert isinstance(log["creator"]["version"], str) and isinstance(log["entries"], list)
    (entry,) = log["entries"]
    datetime.fromisoformat(entry["startedDateTime"].replace("Z", "+00:00"))
    assert isinstance(entry["time"], int | float) and entry["time"] >= 0
    req, resp = entry["request"], entry["response"]
    for key in ("method", "url", "httpVersion"):
        assert isinstance(req[key], str)
    for part in (req, resp):
        assert isinstance(part["cookies"], list) and isinstance(part["headers"], list)
        assert all(set(h) == {"name", "value"} for h in part["headers"])
        assert part["headersSize"] == -1 and isinstance(part["bodySize"], int)
    assert isinstance(req["queryString"], list)
    assert isinstance(resp["status"], int) and isinstance(resp["statusText"], str)
    assert isinstance(resp["content"]["size"], int) and isinstance(resp["content"]["mimeType"], str)
    assert isinstance(resp["redirectURL"], str) and isinstance(entry["cache"], dict)
    for key in ("send", "wait", "receive"):
        assert isinstance(entry["timings"][key], int | float) and entry["timings"][key] >= 0
    assert entry["_resourceType"] == "websocket"
    for m in entry["_webSocketMessages"]:
        assert set(m) == {"type", "time", "opcode", "data"}
        assert m["type"] in ("send", "receive") and m["opcode"] in (1, 2)
        assert isinstance(m["time"], float) and isinstance(m["data"], str)
    return dict(entry)


async def test_a_websocket_capture_opens_as_devtools_would_write_it(
    tmp_path: Path, db: Path
) -> None:
    async with running_proxy(db, command=ECHO) as proxy:  # noqa: SIM117
        async with connect(proxy.url + "/acp?x=1", **RAW) as ws:
            await ws.send('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}')
            assert await ws.recv() == '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'
            await ws.send(b"\xff\xfe binary")
            assert await ws.recv(decode=False) == b"\xff\xfe binary"
    out = tmp_path / "c.har"
    r = cli("export", "--db", str(db), "--format", "har", "-o", str(out))
    assert r.returncode == 0, r.stderr.decode()
    entry = _check_har(json.loads(out.read_bytes()))
    assert entry["response"]["status"] == 101
    assert entry["request"]["url"].startswith("ws://") and "/acp" in entry["request"]["url"]
    names = {h["name"].lower() for h in entry["request"]["headers"]}
    assert {"upgrade", "sec-websocket-key"} <= names
    messages = entry["_webSocketMessages"]
    assert [(m["type"], m["opcode"]) for m in messages] == [
        ("send", 1),
        ("receive", 1),
        ("send", 2),
        ("receive", 2),
    ]
    assert base64.b64decode(messages[2]["data"]) == b"\xff\xfe binary"
    assert messages == sorted(messages, key=lambda m: m["time"])
    # a WebSocket capture round-trips through import too (opcodes, binary payloads)
    first = tmp_path / "a.jsonl"
    assert cli("export", "--db", str(db), "-o", str(first)).returncode == 0
    other = tmp_path / "o.sqlite"
    assert cli("import", "--db", str(other), str(first)).returncode == 0
    again = tmp_path / "b.jsonl"
    assert cli("export", "--db", str(other), "-o", str(again)).returncode == 0
    assert again.read_bytes() == first.read_bytes()


def test_a_stdio_capture_is_one_pseudo_entry(tmp_path: Path, db: Path) -> None:
    run_demo(db)
    r = cli("share", "--db", str(db), "--format", "har", "-o", str(tmp_path / "d.har"))
    assert r.returncode == 0, r.stderr.decode()
    entry = _check_har(json.loads((tmp_path / "d.har").read_bytes()))
    assert entry["request"]["url"].startswith("stdio:///")
    messages = entry["_webSocketMessages"]
    assert len(messages) == 46 and messages[0]["type"] == "send"
    assert json.loads(messages[0]["data"])["method"] == "initialize"
    assert any("[redacted:env:" in m["data"] for m in messages)  # shared: redacted


def _stored(n: int) -> list[StoredFrame]:
    raws = [b'{"jsonrpc":"2.0","method":"x","params":{"s":"a\\nb \\u00e9 \xc3\xa9"}}',
            b"\xff\xfe not text", b"", b'["batch"]', b'{"k": 1}\r']  # fmt: skip
    return [
        StoredFrame(1, Frame(i, Direction(("c2a", "a2c")[i % 2]), i * 1_000_123,
                             raws[i % len(raws)], True, Opcode.BINARY if i % 7 == 3 else None),
                    0, "invalid", None, None, None, None, None, None, None, (), None, None, i)
        for i in range(n)
    ]  # fmt: skip


@pytest.mark.parametrize("n", [0, 1, 4096, 4097, 8193])
def test_the_archive_written_as_the_frames_come_is_the_whole_one_indented(n: int) -> None:
    # laid out message by message, batch by batch, it is byte for byte what orjson makes of
    # the whole archive at once
    capture = {"uid": "u", "transport": "ws", "started_at": "2026-12-04T10:00:00.000Z",
               "ended_ns": 5_000_000, "listen_url": 'ws://h/"_webSocketMessages": []'}  # fmt: skip
    handshake = {"request": {"path": "/acp", "headers": [["Host", "h"]]}, "handshake_ms": 1.5}
    events = [{"kind": "handshake", "detail": json.dumps(handshake)}]
    out = io.BytesIO()
    assert write_har(capture, iter(_stored(n)), events, out) == n
    text = out.getvalue()
    whole = orjson.loads(text)
    assert text == orjson.dumps(whole, option=orjson.OPT_INDENT_2) + b"\n"
    messages = _check_har(whole)["_webSocketMessages"]
    assert len(messages) == n and [m["time"] for m in messages] == sorted(
        m["time"] for m in messages
    )

"""The official Python SDK's Streamable HTTP transport as real peers: its ASGI server under
Hypercorn and its ``create_http_stream`` client, through ``acp-proxy http``: the same
session as without the proxy, every message recorded once with its direction and paired,
and the event-stream bytes the client received equal to those the server sent."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import httpx
import pytest
from acp import PROTOCOL_VERSION
from acp.http import create_http_stream
from acp.ws import create_websocket_stream
from support.http import (
    TeeTransport,
    Transcript,
    check_sdk_capture,
    http_session,
    running_http_proxy,
    sdk_http_server,
    terminal_and_cancel,
)
from support.proc import PROXY
from support.sdk import RecordingClient
from support.ws import events, rows

pytestmark = pytest.mark.interop


async def test_sdk_session_through_the_proxy(tmp_path: Path, db: Path) -> None:
    (tmp_path / "notes.txt").write_text("remember the milk\n")
    async with sdk_http_server() as up:
        direct = await http_session(up.url, tmp_path)
        up.sent.clear()
        up.requests.clear()
        tee = TeeTransport()
        async with running_http_proxy(db, up.url) as proxy:
            relayed = await http_session(proxy.url + "/acp", tmp_path, tee)
    assert relayed == direct
    assert direct[1] == ["end_turn", "end_turn"]
    assert len(rows(db, "SELECT id FROM captures")) == 1
    check_sdk_capture(db, 1)
    # every message of every event stream, byte for byte, as the server sent it
    streams = {k: bytes(v) for k, v in up.sent.items()}
    assert len(streams) == 2  # the connection's stream and the session's
    assert {k: bytes(v) for k, v in tee.received.items()} == streams
    # each message on the streams is a recorded a2c frame, in order
    recorded = [
        bytes(r)
        for (r,) in rows(
            db, "SELECT raw FROM messages WHERE capture_id = 1 AND direction = 'a2c' ORDER BY seq"
        )
    ]
    for data in streams.values():
        for block in data.split(b"\n\n")[:-1]:
            assert block.startswith(b"data: ")
            assert block[len(b"data: ") :] in recorded
    # every POST body the server got is a recorded c2a frame, exactly
    posted = [body for method, _h, body in up.requests if method == "POST"]
    c2a = [
        bytes(r)
        for (r,) in rows(
            db, "SELECT raw FROM messages WHERE capture_id = 1 AND direction = 'c2a' ORDER BY seq"
        )
    ]
    assert c2a == posted
    kinds = [k for k, _ in events(db, 1)]
    assert kinds.count("http") >= 6 and kinds.count("stream_end") == 2
    exchanges = [d for k, d in events(db, 1) if k == "http"]
    assert {d["request"]["method"] for d in exchanges} == {"POST", "GET", "DELETE"}
    init = exchanges[0]
    assert init["response"]["status"] == 200
    assert any(n.lower() == "acp-connection-id" for n, _ in init["response"]["headers"])
    streams_opened = sorted(d["stream"] for d in exchanges if "stream" in d)
    assert streams_opened == ["connection", "session"]


async def test_views_work_on_an_http_capture(tmp_path: Path, db: Path) -> None:
    (tmp_path / "notes.txt").write_text("remember the milk\n")
    async with sdk_http_server() as up, running_http_proxy(db, up.url) as proxy:
        await http_session(proxy.url + "/acp", tmp_path)
    shown = subprocess.run(
        [*PROXY, "show", "--db", str(db), "1"], capture_output=True, text=True, timeout=60
    )
    assert shown.returncode == 0, shown.stderr
    assert "session/prompt" in shown.stdout and "fs/read_text_file" in shown.stdout
    tools = subprocess.run(
        [*PROXY, "show", "--db", str(db), "1", "--view", "tools", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert tools.returncode == 0, tools.stderr
    assert "call_1" in tools.stdout and "completed" in tools.stdout
    listed = subprocess.run(
        [*PROXY, "captures", "--db", str(db)], capture_output=True, text=True, timeout=60
    )
    assert "http" in listed.stdout


async def test_websocket_upgrade_on_the_same_listener(tmp_path: Path, db: Path) -> None:
    (tmp_path / "notes.txt").write_text("remember the milk\n")
    from acp import connect_to_agent, text_block
    from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation

    async with sdk_http_server() as up, running_http_proxy(db, up.url) as proxy:
        client = RecordingClient()
        ws_url = "ws" + proxy.url[len("http") :] + "/acp"
        transport = await create_websocket_stream(ws_url)
        conn = connect_to_agent(client, transport)
        try:
            await conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(
                    fs=FileSystemCapabilities(read_text_file=True)
                ),
                client_info=Implementation(name="sdk-ws-client", version="0.1.0"),
            )
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            r = await conn.prompt(session_id=session.session_id, prompt=[text_block("hi")])
            assert r.stop_reason == "end_turn"
        finally:
            await conn.close()
            await transport.close()
        # and HTTP on the same port, at the same time as the WebSocket's capture is done
        await http_session(proxy.url + "/acp", tmp_path)
    caps = rows(db, "SELECT id, transport FROM captures ORDER BY id")
    assert [t for _, t in caps] == ["ws", "http"]
    methods = rows(
        db, "SELECT method FROM messages WHERE capture_id = 1 AND kind = 'request' ORDER BY seq"
    )
    assert ("fs/read_text_file",) in methods
    (handshake,) = [d for k, d in events(db, 1) if k == "handshake"]
    assert json.dumps(handshake).lower().count("acp-connection-id") >= 1


@pytest.mark.parametrize("http2", [False, True], ids=["http1", "h2c"])
async def test_a_terminal_and_a_cancel_through_the_proxy(
    tmp_path: Path, db: Path, http2: bool
) -> None:
    # the scripted SDK pair's other half: a terminal the client runs as a real process for
    # the agent, and a prompt the client cancels; the same transcript with and without the
    # proxy, every request recorded once and paired, the views rebuilt from the capture
    async with sdk_http_server() as up:
        direct = await _terminal_session(up.url, tmp_path, http2)
        async with running_http_proxy(db, up.url) as proxy:
            relayed = await _terminal_session(proxy.url + "/acp", tmp_path, http2)
    assert relayed == direct
    assert direct[1] == ["end_turn", "cancelled"]
    assert len(rows(db, "SELECT id FROM captures")) == 1
    messages = rows(
        db,
        "SELECT direction, kind, method FROM messages WHERE capture_id = 1 "
        "AND kind IN ('request', 'notification') AND method != 'session/update' ORDER BY seq",
    )
    assert messages == [
        ("c2a", "request", "initialize"),
        ("c2a", "request", "session/new"),
        ("c2a", "request", "session/prompt"),
        ("a2c", "request", "terminal/create"),
        ("a2c", "request", "terminal/wait_for_exit"),
        ("a2c", "request", "terminal/output"),
        ("a2c", "request", "terminal/release"),
        ("c2a", "request", "session/prompt"),
        ("c2a", "notification", "session/cancel"),
    ]
    responses = rows(
        db,
        "SELECT COUNT(*) FROM messages WHERE capture_id = 1 AND kind = 'response' "
        "AND request_seq IS NOT NULL",
    )
    assert responses == [(8,)]
    odd = rows(
        db,
        "SELECT seq, anomalies FROM messages WHERE capture_id = 1 "
        "AND (anomalies IS NOT NULL OR kind IN ('invalid', 'error'))",
    )
    assert odd == []
    (terminal,) = json.loads(_view(db, "terminals"))
    assert terminal["terminalId"] == "term-1" and terminal["released"] is True
    assert terminal["exitStatus"] == {"exitCode": 0, "signal": None}
    assert terminal["screen"] == ["hello from a terminal"]
    turns = json.loads(_view(db, "turns"))
    assert [t["stopReason"] for t in turns] == ["end_turn", "cancelled"]


async def _terminal_session(url: str, cwd: Path, http2: bool) -> Transcript:
    http = httpx.AsyncClient(transport=TeeTransport(http2=http2), timeout=httpx.Timeout(30.0))
    try:
        return await terminal_and_cancel(create_http_stream(url, client=http), cwd)
    finally:
        await http.aclose()


def _view(db: Path, name: str) -> str:
    return subprocess.run(
        [*PROXY, "show", "1", "--db", str(db), "--view", name, "--json"],
        capture_output=True,
        check=True,
        text=True,
    ).stdout

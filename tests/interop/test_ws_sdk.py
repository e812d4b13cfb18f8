"""The official Python SDK's WebSocket transport as real peers: its ASGI server under
Hypercorn and its ``acp.ws`` client, through the man in the middle and both bridges, give
the same session as without the proxy."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, connect_to_agent, spawn_agent_process, text_block
from acp.http.asgi import create_asgi_app
from acp.schema import (
    ClientCapabilities,
    FileSystemCapabilities,
    Implementation,
)
from acp.ws import create_websocket_stream
from hypercorn.asyncio import serve as hypercorn_serve
from hypercorn.config import Config
from support.paths import PEERS
from support.proc import PROXY, wait_recorded
from support.sdk import RecordingClient
from support.ws import events, rows, running_proxy

from acp_proxy.protocol.frames import Direction
from acp_proxy.store.reader import Store

pytestmark = pytest.mark.interop


def _sdk_agent_class() -> Any:
    spec = importlib.util.spec_from_file_location("ws_sdk_agent", PEERS / "sdk_agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SdkAgent


@contextlib.asynccontextmanager
async def sdk_server() -> AsyncIterator[str]:
    """The SDK's Streamable HTTP + WebSocket app (its http_server example) under Hypercorn."""
    agent_class = _sdk_agent_class()

    def factory(conn: Any) -> Any:
        agent = agent_class()
        agent.on_connect(conn)
        return agent

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    sock.setblocking(False)
    port = sock.getsockname()[1]
    config = Config()
    config.bind = [f"fd://{sock.detach()}"]  # Hypercorn owns and closes it
    config.loglevel = "WARNING"
    config.accesslog = None
    stop = asyncio.Event()
    task = asyncio.create_task(
        hypercorn_serve(create_asgi_app(factory), config, shutdown_trigger=stop.wait)  # type: ignore[arg-type]
    )
    try:
        yield f"ws://127.0.0.1:{port}/acp"
    finally:
        stop.set()
        await task


async def ws_session(url: str, cwd: Path) -> tuple[list[dict[str, Any]], list[str]]:
    client = RecordingClient()
    transport = await create_websocket_stream(url)
    conn = connect_to_agent(client, transport)
    try:
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True)),
            client_info=Implementation(name="sdk-ws-client", version="0.1.0"),
        )
        session = await conn.new_session(cwd=str(cwd), mcp_servers=[])
        stops = []
        for text in ("hello", "héllo wörld ✔"):
            r = await conn.prompt(session_id=session.session_id, prompt=[text_block(text)])
            stops.append(r.stop_reason)
    finally:
        await conn.close()
        await transport.close()
    return client.updates, stops


def _check_capture(db: Path, transport: str) -> None:
    (cap,) = rows(
        db, "SELECT id, transport, protocol_version, client_info, agent_info FROM captures"
    )
    assert cap[1] == transport
    assert cap[2] == PROTOCOL_VERSION
    assert "sdk-ws-client" in cap[3] and "sdk-test-agent" in cap[4]
    methods = {m for (m,) in rows(db, "SELECT method FROM messages WHERE kind = 'request'") if m}
    assert {"initialize", "session/new", "session/prompt", "session/request_permission",
            "fs/read_text_file"} <= methods  # fmt: skip
    unpaired = rows(db, "SELECT COUNT(*) FROM messages WHERE anomalies LIKE '%unpaired%'")
    assert unpaired == [(0,)]


async def test_sdk_peers_through_the_man_in_the_middle(tmp_path: Path, db: Path) -> None:
    (tmp_path / "notes.txt").write_text("remember the milk\n")
    async with sdk_server() as url:
        direct = await ws_session(url, tmp_path)
        async with running_proxy(db, upstream=url) as proxy:
            relayed = await ws_session(proxy.url + "/acp", tmp_path)
    assert relayed == direct
    assert direct[1] == ["end_turn", "end_turn"]
    _check_capture(db, "ws")
    (handshake,) = [d for k, d in events(db, 1) if k == "handshake"]
    names = [n.lower() for n, _ in handshake["response"]["headers"]]
    assert "acp-connection-id" in names  # the SDK server's id reached the client


async def test_sdk_ws_client_to_stdio_sdk_agent(tmp_path: Path, db: Path) -> None:
    (tmp_path / "notes.txt").write_text("remember the milk\n")
    command = [sys.executable, str(PEERS / "sdk_agent.py")]
    async with running_proxy(db, command=command) as proxy:
        updates, stops = await ws_session(proxy.url + "/acp", tmp_path)
    assert stops == ["end_turn", "end_turn"]
    assert any(u.get("sessionUpdate") == "agent_message_chunk" for u in updates)
    _check_capture(db, "ws-stdio")
    store = Store(db)
    # the agent's stdout, rebuilt from the rows, is compact JSON lines as the SDK wrote them
    out = store.stream_bytes(1, Direction.AGENT_TO_CLIENT)
    assert out.endswith(b"\n") and out.count(b"\n") == len(
        rows(db, "SELECT 1 FROM messages WHERE direction = 'a2c'")
    )


async def test_sdk_stdio_client_to_sdk_ws_server(tmp_path: Path, db: Path) -> None:
    (tmp_path / "notes.txt").write_text("remember the milk\n")
    async with sdk_server() as url:
        client = RecordingClient()
        cmd = [*PROXY, "record", "--db", str(db), "--upstream", url]
        async with spawn_agent_process(client, cmd[0], *cmd[1:]) as (conn, _proc):
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
    assert any(u.get("sessionUpdate") == "agent_message_chunk" for u in client.updates)
    wait_recorded(db)  # it outlives the relay
    _check_capture(db, "stdio-ws")

"""Shared helpers for the Streamable HTTP tests: the official SDK's ASGI server under
Hypercorn with every body byte it sent kept, an HTTP client that keeps every byte it
received, the proxy run in-process on a real loopback socket, and one SDK session."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import socket
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from acp import PROTOCOL_VERSION, connect_to_agent, text_block
from acp.http import create_http_stream
from acp.http.asgi import create_asgi_app
from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation
from hypercorn.asyncio import serve as hypercorn_serve
from hypercorn.config import Config

from acp_proxy.record.link import RecorderLink
from acp_proxy.relay.config import ServeConfig
from acp_proxy.relay.core.admission import Admission
from acp_proxy.relay.http import serve
from acp_proxy.transports.websocket import WsSettings
from support.paths import PEERS
from support.sdk import RecordingClient
from support.ws import Proxy, listening, rows

StreamKey = tuple[str, str, str | None]  # method, connection id, session id


@contextlib.asynccontextmanager
async def loopback_server(handle: Any) -> AsyncIterator[str]:
    """``handle(reader, writer)`` serving connections on a loopback port: its ``/acp`` URL."""
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/acp"
    finally:
        server.close()


def _sdk_agent_class() -> Any:
    spec = importlib.util.spec_from_file_location("http_sdk_agent", PEERS / "sdk_agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SdkAgent


def _key(method: str, headers: Any) -> StreamKey:
    conn = headers.get("acp-connection-id") or ""
    return method, conn, headers.get("acp-session-id")


@dataclass
class Upstream:
    url: str = ""
    sent: dict[StreamKey, bytearray] = field(default_factory=lambda: defaultdict(bytearray))
    requests: list[tuple[str, list[tuple[bytes, bytes]], bytes]] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)  # the HTTP version of each request
    clients: set[int] = field(default_factory=set)  # the port of each client connection


def _teeing(app: Any, up: Upstream) -> Any:
    """The app, keeping every response body byte it sends (per request kind) and every
    request it got."""

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        key = _key(scope["method"], headers)
        up.versions.append(scope["http_version"])
        up.clients.add(scope["client"][1])
        body = bytearray()

        async def rx() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                body.extend(message.get("body", b""))
                if not message.get("more_body"):
                    up.requests.append((scope["method"], list(scope["headers"]), bytes(body)))
            return message

        async def tx(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body" and scope["method"] == "GET":
                up.sent[key] += message.get("body", b"")
            await send(message)

        await app(scope, rx, tx)

    return wrapped


@contextlib.asynccontextmanager
async def sdk_http_server(app: Any = None) -> AsyncIterator[Upstream]:
    """The SDK's Streamable HTTP + WebSocket app (its http_server example) under
    Hypercorn; ``url`` is its ``/acp`` endpoint."""
    agent_class = _sdk_agent_class()

    def factory(conn: Any) -> Any:
        agent = agent_class()
        agent.on_connect(conn)
        return agent

    up = Upstream()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    sock.setblocking(False)
    port = sock.getsockname()[1]
    config = Config()
    config.bind = [f"fd://{sock.detach()}"]  # Hypercorn owns and closes it
    config.loglevel = "WARNING"
    config.accesslog = None
    config.graceful_timeout = 0.5
    stop = asyncio.Event()
    asgi = _teeing(app or create_asgi_app(factory), up)
    task = asyncio.create_task(hypercorn_serve(asgi, config, shutdown_trigger=stop.wait))  # type: ignore[arg-type]
    up.url = f"http://127.0.0.1:{port}/acp"
    try:
        yield up
    finally:
        stop.set()
        await task


class TeeTransport(httpx.AsyncBaseTransport):
    """An httpx transport that keeps every response body byte the client received, and
    the HTTP version of each answer; ``http2``: HTTP/2 with prior knowledge only."""

    def __init__(self, *, http2: bool = False) -> None:
        self.inner = httpx.AsyncHTTPTransport(http1=not http2, http2=http2)
        self.received: dict[StreamKey, bytearray] = defaultdict(bytearray)
        self.versions: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        self.versions.append(response.extensions["http_version"].decode())
        key = _key(request.method, request.headers)
        inner = response.stream
        sink = self.received[key] if request.method == "GET" else bytearray()

        class Stream(httpx.AsyncByteStream):
            async def __aiter__(self) -> AsyncIterator[bytes]:
                async for chunk in inner:  # type: ignore[union-attr]
                    sink.extend(chunk)
                    yield chunk

            async def aclose(self) -> None:
                await inner.aclose()  # type: ignore[union-attr]

        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=Stream(),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


Transcript = tuple[list[dict[str, Any]], list[str]]
PROMPTS = ("hello", "héllo wörld ✔")


@contextlib.asynccontextmanager
async def _session(
    transport: Any, cwd: Path, *, terminal: bool = False
) -> AsyncIterator[tuple[RecordingClient, Any, str]]:
    """An SDK client connected on ``transport``, initialized (with the terminal capability
    when ``terminal``), with one session: (the client, the connection, the session id).
    The connection and the transport are closed at the end."""
    client = RecordingClient()
    conn = connect_to_agent(client, transport)
    fs = FileSystemCapabilities(read_text_file=True)
    try:
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=(
                ClientCapabilities(fs=fs, terminal=True) if terminal else ClientCapabilities(fs=fs)
            ),
            client_info=Implementation(name="sdk-http-client", version="0.1.0"),
        )
        session = await conn.new_session(cwd=str(cwd), mcp_servers=[])
        yield client, conn, session.session_id
    finally:
        await conn.close()
        await transport.close()


async def sdk_session(transport: Any, cwd: Path, prompts: tuple[str, ...] = PROMPTS) -> Transcript:
    """One SDK client session on ``transport`` (any of the SDK's): initialize, a session,
    the prompts (each with a tool call, a permission request and a file read); the updates
    the client saw and the stop reasons. The transport is closed at the end."""
    async with _session(transport, cwd) as (client, conn, sid):
        stops = []
        for text in prompts:
            r = await conn.prompt(session_id=sid, prompt=[text_block(text)])
            stops.append(r.stop_reason)
    return client.updates, stops


async def http_session(
    url: str, cwd: Path, tee: TeeTransport | None = None, *, http2: bool = False
) -> Transcript:
    """:func:`sdk_session` over Streamable HTTP, every byte the client received kept in
    ``tee``; ``http2``: the client speaks HTTP/2 with prior knowledge (h2c)."""
    tee = tee or TeeTransport(http2=http2)
    http = httpx.AsyncClient(transport=tee, timeout=httpx.Timeout(30.0))
    try:
        return await sdk_session(create_http_stream(url, client=http), cwd)
    finally:
        await http.aclose()


async def terminal_and_cancel(transport: Any, cwd: Path) -> Transcript:
    """One SDK client session on ``transport`` that runs a command in a terminal of the
    client's (a real process), then a prompt the client cancels once the agent has started
    on it: the updates the client saw and the stop reasons."""
    async with _session(transport, cwd, terminal=True) as (client, conn, sid):
        ran = await conn.prompt(session_id=sid, prompt=[text_block("use a terminal")])
        seen = len(client.updates)
        waiting = asyncio.create_task(conn.prompt(session_id=sid, prompt=[text_block("wait")]))
        while len(client.updates) == seen:  # the agent has the prompt: its echo came back
            await asyncio.sleep(0.01)
        await conn.cancel(session_id=sid)
        cancelled = await asyncio.wait_for(waiting, 30)
    return client.updates, [ran.stop_reason, cancelled.stop_reason]


def check_sdk_capture(db: Path, capture: int) -> None:
    """The capture of one :func:`http_session`: its peers, every request recorded once
    with its direction, nothing unpaired."""
    (cap,) = rows(
        db,
        "SELECT transport, protocol_version, client_info, agent_info FROM captures WHERE id = ?",
        capture,
    )
    assert cap[0] == "http"
    assert cap[1] == PROTOCOL_VERSION
    assert "sdk-http-client" in cap[2] and "sdk-test-agent" in cap[3]
    requests = rows(
        db,
        "SELECT direction, method FROM messages WHERE capture_id = ? AND kind = 'request' "
        "ORDER BY seq",
        capture,
    )
    assert requests == [
        ("c2a", "initialize"),
        ("c2a", "session/new"),
        ("c2a", "session/prompt"),
        ("a2c", "session/request_permission"),
        ("a2c", "fs/read_text_file"),
        ("c2a", "session/prompt"),
        ("a2c", "session/request_permission"),
        ("a2c", "fs/read_text_file"),
    ]
    unpaired = rows(
        db,
        "SELECT seq, kind, anomalies FROM messages WHERE capture_id = ? AND "
        "(anomalies IS NOT NULL OR kind IN ('invalid', 'error'))",
        capture,
    )
    assert unpaired == []
    pending = rows(
        db,
        "SELECT q.seq FROM messages q WHERE q.capture_id = ? AND q.kind = 'request' AND NOT "
        "EXISTS (SELECT 1 FROM messages r WHERE r.capture_id = q.capture_id "
        "AND r.request_seq = q.seq)",
        capture,
    )
    assert pending == []


@contextlib.asynccontextmanager
async def running_http_proxy(
    db: Path,
    upstream: str,
    *,
    token: str | None = None,
    settings: WsSettings | None = None,
    max_connections: int = 64,
    upstream_http2: str = "auto",
) -> AsyncIterator[Proxy]:
    writer = RecorderLink(db)
    stop = asyncio.Event()
    config = ServeConfig(
        port=0,
        upstream=upstream,
        settings=settings or WsSettings(),
        admission=Admission(token, frozenset()),
        max_connections=max_connections,
        upstream_http2=upstream_http2,
    )
    async with listening(db, config, writer, stop, serve) as proxy:
        yield proxy


# -- raw peers: exact bytes on the wire ---------------------------------------------------


@dataclass
class RawUpstream:
    """A raw HTTP/1.1 server: ``reply(method, target, headers, body)`` gives the bytes
    to write back (a list of pieces, written one by one, a short pause between them);
    ``None`` in the list: close the connection there."""

    url: str = ""
    requests: list[tuple[bytes, bytes, list[tuple[bytes, bytes]], bytes]] = field(
        default_factory=list
    )
    eof: asyncio.Event = field(default_factory=asyncio.Event)


@contextlib.asynccontextmanager
async def raw_upstream(reply: Any) -> AsyncIterator[RawUpstream]:
    import h11

    up = RawUpstream()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = h11.Connection(h11.SERVER)
        request = None
        body = bytearray()
        try:
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    data = await reader.read(65536)
                    conn.receive_data(data)
                    if not data and request is None:
                        return
                    continue
                if isinstance(event, h11.Request):
                    request = event
                elif isinstance(event, h11.Data):
                    body += event.data
                elif isinstance(event, h11.EndOfMessage):
                    assert request is not None
                    headers = list(request.headers.raw_items())
                    up.requests.append((request.method, request.target, headers, bytes(body)))
                    for piece in reply(request.method, request.target, headers, bytes(body)):
                        if piece is None:
                            writer.close()
                            return
                        writer.write(piece)
                        await writer.drain()
                        await asyncio.sleep(0.02)
                    # then wait for the other side to go away
                    while await reader.read(65536):
                        pass
                    up.eof.set()
                    return
        finally:
            writer.close()

    async with loopback_server(handle) as up.url:
        yield up


def chunked(*pieces: bytes) -> list[bytes]:
    return [b"%x\r\n%s\r\n" % (len(p), p) for p in pieces]


def rebuild_stream(
    messages: list[tuple[int, str | None, bytes]], events: list[tuple[str, dict[str, Any]]]
) -> bytes:
    """An event stream rebuilt from a capture: ``messages`` are the capture's a2c rows
    (index among them, opcode, raw), ``events`` its events; the stream is the one whose
    ``stream_end`` is the first."""
    end = next(d for k, d in events if k == "stream_end")
    scope = (end["stream"], end.get("session"))
    sse = [d for k, d in events if k == "sse" and (d["stream"], d.get("session")) == scope]
    raw_of = {d["message"]: d for d in sse if "message" in d}
    pending = [d for d in sse if "before" in d]
    by_index = {i: (op, raw) for i, op, raw in messages}
    out = bytearray()

    def text(d: dict[str, Any]) -> bytes:
        import base64

        return d["raw"].encode() if "raw" in d else base64.b64decode(d["raw_b64"])

    for index in end["messages"]:
        while pending and pending[0]["before"] <= index:
            out += text(pending.pop(0))
        op, raw = by_index[index]
        if op is None:
            out += raw
        elif index in raw_of:
            out += text(raw_of[index])
        else:
            out += b"data: " + raw + b"\n\n"
    for d in pending:
        out += text(d)
    if "incomplete" in end:
        out += text(end["incomplete"])
    return bytes(out)

"""Every listener as a user runs it, for the drills of docs/reliability.md ("Listeners"):
``http``, ``ws``, ``replay agent --listen`` and ``ui``, each a real process on a loopback
port (optionally short of file descriptors), its output kept in a file; the upstreams
they need (an HTTP server that answers, servers that flood); raw clients that send half a
head, or stop reading.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import re
import resource
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import h11
from websockets.asyncio.server import ServerConnection
from websockets.asyncio.server import serve as ws_serve

from support.demo import demo_database
from support.proc import PROXY

LISTENERS = ("http", "ws", "replay", "ui")
_READY = re.compile(rb"(?:listening on|at|Streamable HTTP:) (\w+://[\d.]+:\d+)")


@dataclass
class Listener:
    """A running listener: its process, its address, and its output so far."""

    kind: str
    proc: subprocess.Popen[bytes]
    host: str
    port: int
    out: Path

    def output(self) -> bytes:
        return self.out.read_bytes()

    async def stop(self, sig: int = signal.SIGTERM, within: float = 60) -> int:
        """Signal it; its exit status (a hang guard of ``within`` seconds: the wait is its
        process's, not its output's, which the recorder it leaves behind may hold)."""
        self.proc.send_signal(sig)
        return await asyncio.to_thread(self.proc.wait, within)


def _limit_files(n: int) -> Callable[[], None]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))

    return limit


@contextlib.asynccontextmanager
async def running(
    kind: str,
    tmp_path: Path,
    *extra: str,
    upstream: str = "http://127.0.0.1:9/acp",
    agent: list[str] | None = None,
    recording: Path | None = None,
    nofile: int | None = None,
) -> AsyncIterator[Listener]:
    """Listener ``kind`` on a free loopback port with ``extra`` options; ``ws`` relays to
    ``upstream`` (``ws://``) or runs ``agent``; ``http`` relays to ``upstream``; ``replay``
    serves ``recording`` (a jsonl export); ``ui`` serves a database with the demo."""
    db = tmp_path / f"{kind}.sqlite"
    args: list[str]
    if kind == "http":
        args = ["http", "--upstream", upstream]
    elif kind == "ws":
        ws_upstream = upstream.replace("http://", "ws://", 1)  # (an HTTP server: it refuses)
        args = ["ws", *(["--", *agent] if agent else ["--upstream", ws_upstream])]
    elif kind == "replay":
        args = ["replay", "agent", str(recording or flood_recording(tmp_path)), "--keep-serving"]
    else:
        demo_database(db)
        if recording is not None:  # capture 2
            subprocess.run([*PROXY, "import", "--db", str(db), str(recording)], check=True)
        args = ["ui", "--no-index"]
    where = ["--db", str(db), "--listen", "127.0.0.1:0"]
    args = [*args[:1], *where, *extra, *args[1:]] if agent else [*args, *where, *extra]
    out = tmp_path / f"{kind}.out"
    with out.open("wb") as sink:
        proc = subprocess.Popen(
            [*PROXY, *args],
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=sink,
            preexec_fn=_limit_files(nofile) if nofile else None,
        )
    try:
        deadline = time.monotonic() + 60
        while (m := _READY.search(out.read_bytes())) is None:
            assert proc.poll() is None, out.read_bytes()
            assert time.monotonic() < deadline, out.read_bytes()
            await asyncio.sleep(0.05)
        host, port = m.group(1).decode().split("//")[1].rsplit(":", 1)
        yield Listener(kind, proc, host, int(port), out)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(60)


def flood_recording(tmp_path: Path, messages: int = 400, size: int = 64 * 1024) -> Path:
    """A recording (a jsonl export) whose agent answers ``initialize`` and then sends
    ``messages`` notifications of ``size`` bytes each: a replay of it floods its client."""
    path = tmp_path / "flood.jsonl"
    init = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'
    answer = b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}'
    lines = [
        {"capture": "f", "seq": 0, "direction": "c2a", "t_ns": 0, "text": init.decode()},
        {"capture": "f", "seq": 1, "direction": "a2c", "t_ns": 1, "text": answer.decode()},
    ]
    note = json.dumps({"jsonrpc": "2.0", "method": "_flood", "params": {"x": "y" * size}})
    lines += [
        {"capture": "f", "seq": 2 + i, "direction": "a2c", "t_ns": 2 + i, "text": note}
        for i in range(messages)
    ]
    with path.open("w") as f:
        for line in lines:
            f.write(json.dumps({**line, "terminated": True}) + "\n")
    return path


INITIALIZE = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'


@contextlib.asynccontextmanager
async def http_upstream() -> AsyncIterator[str]:
    """An HTTP/1.1 agent endpoint that answers every request ``200 {}``, keeping its
    connections alive, except event-stream GETs: those get an endless stream of 64 KiB
    events. Its ``/acp`` URL."""

    handlers: set[tuple[asyncio.Task[None], asyncio.StreamWriter]] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add((task, writer))
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    data = await reader.read(65536)
                    if not data:
                        return
                    conn.receive_data(data)
                elif isinstance(event, h11.Request):
                    accept = dict(event.headers).get(b"accept", b"")
                    if event.method == b"GET" and b"event-stream" in accept:
                        await _flood_events(writer)
                        return
                elif isinstance(event, h11.EndOfMessage):
                    head = [(b"Content-Type", b"application/json"), (b"Content-Length", b"2")]
                    writer.write(conn.send(h11.Response(status_code=200, headers=head)))
                    writer.write(conn.send(h11.Data(data=b"{}")) + conn.send(h11.EndOfMessage()))
                    await writer.drain()
                    conn.start_next_cycle()
                elif isinstance(event, h11.ConnectionClosed):
                    return
        except (OSError, h11.ProtocolError):
            return
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/acp"
    finally:
        server.close()
        for _task, writer in handlers:  # a flood ends with its connection
            writer.transport.abort()
        await asyncio.gather(*(task for task, _ in handlers), return_exceptions=True)


async def _flood_events(writer: asyncio.StreamWriter) -> None:
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    event = b'data: {"jsonrpc":"2.0","method":"_flood","params":{"x":"' + b"y" * 65536 + b'"}}\n\n'
    piece = b"%x\r\n%s\r\n" % (len(event), event)
    while True:
        writer.write(piece)
        await writer.drain()


@contextlib.asynccontextmanager
async def ws_flood_upstream() -> AsyncIterator[str]:
    """A WebSocket agent endpoint that sends 64 KiB messages as fast as it can. Its URL."""

    async def flood(ws: ServerConnection) -> None:
        with contextlib.suppress(Exception):
            while True:
                await ws.send(b"x" * 65536, text=False)

    async with ws_serve(flood, "127.0.0.1", 0, compression=None, max_size=None) as server:
        yield f"ws://127.0.0.1:{next(iter(server.sockets)).getsockname()[1]}/acp"


def flood_agent(tmp_path: Path) -> list[str]:
    """A stdio agent that writes 64 KiB lines as fast as it can."""
    script = tmp_path / "flood_agent.py"
    script.write_text(
        "import sys\n"
        'line = b\'{"jsonrpc":"2.0","method":"_flood","params":{"x":"\''
        " + b'y' * 65536 + b'\"}}\\n'\n"
        "while True:\n    sys.stdout.buffer.write(line)\n    sys.stdout.buffer.flush()\n"
    )
    return [sys.executable, str(script)]


def ws_text(payload: bytes) -> bytes:
    """One masked WebSocket text frame, as a client sends it (the mask: zeros)."""
    size = len(payload)
    if size < 126:
        head = bytes([0x81, 0x80 | size])
    elif size < 1 << 16:
        head = bytes([0x81, 0x80 | 126]) + size.to_bytes(2, "big")
    else:
        head = bytes([0x81, 0x80 | 127]) + size.to_bytes(8, "big")
    return head + b"\0\0\0\0" + payload


def upgrade_head(host: str, path: str = "/acp") -> bytes:
    key = base64.b64encode(os.urandom(16))
    return (
        b"GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n"
        % (path.encode(), host.encode(), key)
    )


async def open_raw(
    listener: Listener, data: bytes, *, rcvbuf: int | None = None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to ``listener`` that has sent ``data``; with ``rcvbuf``, a small receive
    buffer, so that a client that does not read is full soon."""
    import socket

    sock = socket.socket()
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (listener.host, listener.port))
    reader, writer = await asyncio.open_connection(sock=sock, limit=1 << 20)
    if data:
        writer.write(data)
        await writer.drain()
    return reader, writer


async def closed_by_peer(reader: asyncio.StreamReader, within: float = 30) -> bytes:
    """Everything the listener sent until it closed the connection (a hang guard of
    ``within`` seconds)."""
    got = b""
    async with asyncio.timeout(within):
        while True:
            try:
                data = await reader.read(65536)
            except ConnectionResetError:
                return got
            if not data:
                return got
            got += data


async def answered(listener: Listener, request: bytes, within: float = 30) -> bytes:
    """The head of the listener's answer to ``request`` on a new connection."""
    reader, writer = await open_raw(listener, request)
    try:
        async with asyncio.timeout(within):
            return await reader.readuntil(b"\r\n\r\n")
    finally:
        writer.close()


def get(listener: Listener, path: str, host: str | None = None, extra: bytes = b"") -> bytes:
    """A GET of ``path`` naming ``host`` (the listener's address by default)."""
    name = host or f"{listener.host}:{listener.port}"
    return b"GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (path.encode(), name.encode(), extra)


def post(listener: Listener, body: bytes, host: str | None = None) -> bytes:
    """A POST of ``body`` to ``/acp`` (``Content-Length`` its size)."""
    name = host or f"{listener.host}:{listener.port}"
    return (
        b"POST /acp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s"
        % (name.encode(), len(body), body)
    )

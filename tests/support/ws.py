"""Shared helpers for the WebSocket tests: a proxy run in-process on a real loopback socket,
raw upstream servers that record exactly what they received, and database reads."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.asyncio.server import serve as ws_serve
from websockets.exceptions import ConnectionClosed

from acp_proxy.record.link import RecorderLink
from acp_proxy.relay.config import ServeConfig
from acp_proxy.relay.core.admission import Admission
from acp_proxy.relay.listener import serve
from acp_proxy.transports.websocket import WsSettings

RAW = {"compression": None, "max_size": None, "ping_interval": None}


@dataclass
class Upstream:
    """A raw WebSocket server: records each connection's request and messages."""

    url: str
    conns: list[ServerConnection] = field(default_factory=list)
    received: list[list[tuple[str, bytes]]] = field(default_factory=list)
    closed: list[tuple[int | None, str | None, bool]] = field(default_factory=list)
    event: asyncio.Event = field(default_factory=asyncio.Event)


@contextlib.asynccontextmanager
async def upstream_server(
    behaviour: Callable[[ServerConnection, Upstream], Awaitable[None]] | None = None,
    **kwargs: Any,
) -> AsyncIterator[Upstream]:
    """An echo server (default) that keeps every message it received, as bytes."""
    up = Upstream("")

    async def handler(ws: ServerConnection) -> None:
        up.conns.append(ws)
        got: list[tuple[str, bytes]] = []
        up.received.append(got)
        if behaviour is not None:
            await behaviour(ws, up)
            return
        try:
            while True:
                data = await ws.recv(decode=False)
                # websockets tells text from binary only by type when decoding; echo as text
                # when the test marked it, else mirror the opcode seen by the frame tracker
                got.append(("msg", data))
                with contextlib.suppress(ConnectionClosed):  # keep what came before a close
                    await ws.send(data, text=_last_was_text(ws))
        except ConnectionClosed as e:
            up.closed.append(
                (e.rcvd.code if e.rcvd else None, e.rcvd.reason if e.rcvd else None, e.rcvd is None)
            )
            up.event.set()

    opts = {**RAW, **kwargs}
    async with ws_serve(handler, "127.0.0.1", 0, create_connection=_TrackingConn, **opts) as srv:
        port = next(iter(srv.sockets)).getsockname()[1]
        up.url = f"ws://127.0.0.1:{port}"
        yield up


class _TrackingConn(ServerConnection):
    def __init__(self, *a: Any, **k: Any) -> None:
        super().__init__(*a, **k)
        self.kinds: list[bool] = []

    def process_event(self, event: Any) -> None:
        from websockets.frames import Frame, Opcode

        if isinstance(event, Frame) and event.opcode in (Opcode.TEXT, Opcode.BINARY):
            self.kinds.append(event.opcode is Opcode.TEXT)
        super().process_event(event)


def _last_was_text(ws: ServerConnection) -> bool:
    assert isinstance(ws, _TrackingConn)
    return ws.kinds.pop(0)


@dataclass
class Proxy:
    url: str
    db: Path
    writer: RecorderLink
    stop: asyncio.Event
    task: asyncio.Task[None]

    async def close(self) -> None:
        self.stop.set()
        await self.task
        await asyncio.to_thread(self.writer.close, 60)


@contextlib.asynccontextmanager
async def running_proxy(
    db: Path,
    *,
    upstream: str | None = None,
    command: list[str] | None = None,
    token: str | None = None,
    allow_origins: tuple[str, ...] = (),
    settings: WsSettings | None = None,
    keep_secrets: bool = False,
    grace: float = 1.0,
) -> AsyncIterator[Proxy]:
    writer = RecorderLink(db)
    stop = asyncio.Event()
    config = ServeConfig(
        port=0,
        upstream=upstream,
        command=command,
        settings=settings or WsSettings(),
        admission=Admission(token, frozenset(allow_origins)),
        keep_secrets=keep_secrets,
        grace=grace,
    )
    async with listening(db, config, writer, stop) as proxy:
        yield proxy


@contextlib.asynccontextmanager
async def listening(
    db: Path, config: ServeConfig, writer: RecorderLink, stop: asyncio.Event, serve_fn: Any = None
) -> AsyncIterator[Proxy]:
    """A listener (``serve_fn``: the WebSocket one by default) running in this loop until
    the block ends, its recorder closed after it."""
    urls: list[str] = []
    run = serve if serve_fn is None else serve_fn
    task = asyncio.create_task(run(config, writer, stop, ready=urls.append))
    while not urls:
        if task.done():
            task.result()
        await asyncio.sleep(0.005)
    proxy = Proxy(urls[0], db, writer, stop, task)
    try:
        yield proxy
    finally:
        await proxy.close()


def rows(db: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    con = sqlite3.connect(db)
    try:
        return list(con.execute(sql, args))
    finally:
        con.close()


def events(db: Path, capture_id: int | None = None) -> list[tuple[str, dict[str, Any]]]:
    sql = "SELECT kind, detail FROM events"
    args: tuple[Any, ...] = ()
    if capture_id is not None:
        sql += " WHERE capture_id = ?"
        args = (capture_id,)
    return [(k, json.loads(d) if d else {}) for k, d in rows(db, sql + " ORDER BY id", *args)]


def messages(db: Path, capture_id: int) -> list[tuple[int, str, str | None, int, bytes]]:
    return [
        (s, d, o, t, bytes(r))
        for s, d, o, t, r in rows(
            db,
            "SELECT seq, direction, opcode, terminated, raw FROM messages "
            "WHERE capture_id = ? ORDER BY seq",
            capture_id,
        )
    ]

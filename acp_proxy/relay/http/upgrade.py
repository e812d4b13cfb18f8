"""WebSocket upgrades received by another listener, handed to the WebSocket relay.

What belongs here: :class:`Upgrades`. The HTTP listener (:mod:`acp_proxy.relay.http`) reads
a connection's first request itself; when it is a WebSocket upgrade, the connection's
transport is given to a ``websockets`` server connection made here, with the bytes read so
far, and from then on it is exactly a connection of ``acp-proxy ws``: the same admission,
the same relay, one ``ws`` capture (:mod:`acp_proxy.relay.listener`). Connections are made
as :func:`websockets.asyncio.server.serve` makes them, with the settings of
:class:`acp_proxy.transports.websocket.WsSettings`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import Any

from websockets.asyncio.server import Server
from websockets.protocol import State
from websockets.server import ServerProtocol
from websockets.typing import Subprotocol

from acp_proxy.record.link import RecorderLink
from acp_proxy.relay.admission import ServeConfig
from acp_proxy.relay.capacity import Capacity
from acp_proxy.relay.listener import Front
from acp_proxy.transports.websocket import RelayServerConnection

__all__ = ["Upgrades"]

_LOG = logging.getLogger("websockets.server")


async def _no_server() -> asyncio.Server:
    raise RuntimeError("upgrades arrive through another listener")


class Upgrades:
    """Turns accepted connections into WebSocket relay connections."""

    def __init__(
        self,
        config: ServeConfig,
        writer: RecorderLink,
        capacity: Capacity,
        listening: asyncio.Server,
        listen_url: str,
    ) -> None:
        self.front = Front(config, writer)
        self.front.capacity = capacity  # one listener, one limit for both transports
        self.front.listen_url = listen_url
        self.server = Server(_no_server, self._handle, _LOG)
        self.server.server = listening  # whether it is serving: the listener's socket
        self.settings = config.settings

    def take(self, transport: asyncio.Transport, received: bytes) -> None:
        """``transport`` is a WebSocket connection from now on; ``received`` is everything
        read from it so far (the upgrade request, perhaps more)."""
        s = self.settings
        conn: RelayServerConnection

        def select(protocol: ServerProtocol, offered: Sequence[Subprotocol]) -> Any:
            return self.front.select_subprotocol(conn, offered)

        protocol = ServerProtocol(
            origins=None,  # checked by Admission, so refusals are recorded
            extensions=None,  # no compression
            subprotocols=None,
            select_subprotocol=select,
            max_size=s.max_size,
            logger=_LOG,
        )
        conn = RelayServerConnection(
            protocol,
            self.server,
            ping_interval=s.ping_interval,
            ping_timeout=s.ping_timeout if s.ping_interval is not None else None,
            close_timeout=s.close_timeout,
            max_queue=s.max_queue,
            write_limit=s.write_limit,
        )
        transport.set_protocol(conn)
        conn.connection_made(transport)
        if received:
            conn.data_received(received)

    async def _handle(self, conn: Any) -> None:
        """What ``serve`` does with a connection: the handshake (with our hooks), then the
        relay; the TCP connection is closed whatever happens."""
        server = self.server
        front = self.front
        try:
            async with asyncio.timeout(self.settings.open_timeout * 1.5):
                await conn.handshake(front.process_request, front.process_response, None)
            if conn.protocol.state is not State.OPEN:
                conn.transport.abort()
                return
            server.all_connections.add(conn)
            conn.start_keepalive()
            try:
                async with conn:
                    await front.handler(conn)
            except Exception:
                _LOG.error("connection handler failed", exc_info=True)
            finally:
                server.all_connections.discard(conn)
        except Exception:
            conn.transport.abort()
        finally:
            server.handler_tasks.discard(asyncio.current_task())

    async def close(self) -> None:
        """Close open WebSocket connections with 1001 (going away), as ``ws`` does on a
        signal, and wait for their sessions to be recorded."""
        for conn in list(self.server.all_connections):
            with contextlib.suppress(Exception):
                await conn.close(1001)
        for task in list(self.server.handler_tasks):
            with contextlib.suppress(Exception):
                await task
        for t in list(self.front.tasks):
            await t

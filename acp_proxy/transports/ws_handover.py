"""WebSocket connections whose upgrade request another listener read, served on
``websockets`` as its own server would serve them.

What belongs here: :class:`HandOver`. An HTTP listener that reads a connection's first
request itself (the Streamable HTTP relay, the replay's listener) gives the transport,
with every byte read so far, to :meth:`HandOver.take`: a ``websockets`` server connection
is made on it, as :func:`websockets.asyncio.server.serve` makes them (with the settings
of :class:`acp_proxy.transports.websocket.WsSettings`), does the opening handshake with
the given hooks and runs the handler. Nothing of what is relayed or recorded is here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from websockets.asyncio.server import Server, ServerConnection
from websockets.protocol import State
from websockets.server import ServerProtocol
from websockets.typing import Subprotocol

from acp_proxy.transports.websocket import WsSettings

__all__ = ["HandOver"]

_LOG = logging.getLogger("websockets.server")

Handler = Callable[[Any], Awaitable[None]]
Select = Callable[[Any, Sequence[Subprotocol]], Any]


async def _no_server() -> asyncio.Server:
    raise RuntimeError("upgrades arrive through another listener")


class HandOver:
    """Turns accepted connections into WebSocket server connections of ``connection``'s
    class, each running ``handler`` after a handshake with ``process_request`` and
    ``process_response`` (as ``serve`` takes them)."""

    def __init__(
        self,
        handler: Handler,
        settings: WsSettings,
        listening: asyncio.Server,
        *,
        process_request: Any = None,
        process_response: Any = None,
        select_subprotocol: Select | None = None,
        connection: type[ServerConnection] = ServerConnection,
    ) -> None:
        self.handler = handler
        self.settings = settings
        self.hooks = (process_request, process_response)
        self.select = select_subprotocol
        self.connection = connection
        self.server = Server(_no_server, self._handle, _LOG)
        self.server.server = listening  # whether it is serving: the listener's socket

    def take(self, transport: asyncio.Transport, received: bytes) -> None:
        """``transport`` is a WebSocket connection from now on; ``received`` is everything
        read from it so far (the upgrade request, perhaps more)."""
        s = self.settings
        conn: ServerConnection
        select = self.select

        def selecting(protocol: ServerProtocol, offered: Sequence[Subprotocol]) -> Any:
            assert select is not None
            return select(conn, offered)

        protocol = ServerProtocol(
            origins=None,  # checked by the hooks, so refusals are the listener's to say
            extensions=None,  # no compression
            subprotocols=None,
            select_subprotocol=selecting if select is not None else None,
            max_size=s.max_size,
            logger=_LOG,
        )
        conn = self.connection(
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
        handler; the TCP connection is closed whatever happens."""
        server = self.server
        try:
            async with asyncio.timeout(self.settings.open_timeout * 1.5):
                await conn.handshake(*self.hooks, None)
            if conn.protocol.state is not State.OPEN:
                conn.transport.abort()
                return
            server.all_connections.add(conn)
            conn.start_keepalive()
            try:
                async with conn:
                    await self.handler(conn)
            except Exception:
                _LOG.error("connection handler failed", exc_info=True)
            finally:
                server.all_connections.discard(conn)
        except Exception:
            conn.transport.abort()
        finally:
            server.handler_tasks.discard(asyncio.current_task())

    async def close(self, code: int = 1001) -> None:
        """Close open connections (1001: going away) and wait for their handlers."""
        for conn in list(self.server.all_connections):
            with contextlib.suppress(Exception):
                await conn.close(code)
        for task in list(self.server.handler_tasks):
            with contextlib.suppress(Exception):
                await task

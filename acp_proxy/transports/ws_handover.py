"""WebSocket server connections on transports ``websockets`` did not accept, served as
its own server would serve them.

What belongs here: :class:`HandOver`. An HTTP listener that reads a connection's first
request itself (the Streamable HTTP relay, the replay's listener) gives the transport,
with every byte read so far, to :meth:`HandOver.take`; the WebSocket listener makes its
connections with :meth:`HandOver.protocol` (its sockets accepted by
:class:`acp_proxy.transports.accept.Acceptor`, not ``serve``'s, so that running out of
descriptors cannot stop it). Either way a ``websockets`` server connection is made, as
:func:`websockets.asyncio.server.serve` makes them (with the settings of
:class:`acp_proxy.transports.websocket.WsSettings`), does the opening handshake with the
given hooks, within the timeouts, and runs the handler; :meth:`HandOver.close` ends them
within bounded time, whether their peers read or not. Nothing of what is relayed or
recorded is here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from websockets.asyncio.server import Server, ServerConnection
from websockets.protocol import State
from websockets.server import ServerProtocol
from websockets.typing import Subprotocol

from acp_proxy.transports.timeouts import Timeouts
from acp_proxy.transports.websocket import (
    GuardedServerConnection,
    StallGuard,
    WsSettings,
    close_within,
)

__all__ = ["HandOver"]

_LOG = logging.getLogger("websockets.server")

Handler = Callable[[Any], Awaitable[None]]
Select = Callable[[Any, Sequence[Subprotocol]], Any]


async def _no_server() -> asyncio.Server:
    raise RuntimeError("upgrades arrive through another listener")


class HandOver:
    """Turns connections into WebSocket server connections of ``connection``'s class, each
    running ``handler`` after a handshake with ``process_request`` and ``process_response``
    (as ``serve`` takes them): connections another listener read the upgrade of
    (:meth:`take`), or fresh ones (:meth:`protocol`, an asyncio protocol factory).

    The upgrade request must come within ``timeouts.head`` of the connection's opening;
    the rest of the handshake (the hooks: an upstream being dialled) within 1.5 ×
    ``settings.open_timeout``."""

    def __init__(
        self,
        handler: Handler,
        settings: WsSettings,
        *,
        timeouts: Timeouts | None = None,
        process_request: Any = None,
        process_response: Any = None,
        select_subprotocol: Select | None = None,
        connection: type[ServerConnection] = GuardedServerConnection,
    ) -> None:
        self.handler = handler
        self.settings = settings
        self.timeouts = timeouts or Timeouts()
        self.hooks = (process_request, process_response)
        self.select = select_subprotocol
        self.connection = connection
        self.serving = True
        self.server = Server(_no_server, self._handle, _LOG)
        # whether it is serving (a handshake ending after close() is answered 503): ours
        self.server.server = self  # type: ignore[assignment]

    def is_serving(self) -> bool:
        return self.serving

    def protocol(self) -> ServerConnection:
        """A server connection for a fresh transport (nothing read from it yet)."""
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
        if isinstance(conn, StallGuard):
            conn.stall = self.timeouts.idle  # a client reading nothing is dropped
        return conn

    def take(self, transport: asyncio.Transport, received: bytes) -> None:
        """``transport`` is a WebSocket connection from now on; ``received`` is everything
        read from it so far (the upgrade request, perhaps more)."""
        conn = self.protocol()
        transport.set_protocol(conn)
        conn.connection_made(transport)
        if received:
            conn.data_received(received)

    async def _handle(self, conn: Any) -> None:
        """What ``serve`` does with a connection: the handshake (with our hooks), then the
        handler; the TCP connection is closed whatever happens."""
        server = self.server
        try:
            if not await self._request(conn):
                return
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
        except asyncio.CancelledError:
            conn.transport.abort()
            raise
        except Exception:  # the handshake failed or took too long
            conn.transport.abort()
        finally:
            server.handler_tasks.discard(asyncio.current_task())

    async def _request(self, conn: Any) -> bool:
        """Whether the upgrade request came in time (else the connection is closed)."""
        waits = [conn.request_rcvd, conn.connection_lost_waiter]
        try:
            async with asyncio.timeout(self.timeouts.head):
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        except TimeoutError:
            conn.transport.abort()
            return False
        return conn.request is not None

    async def close(self, code: int = 1001, settle: float = 10.0) -> None:
        """Stop: close open connections with ``code`` (1001: going away), each given at
        most the close timeout before its TCP connection is dropped; drop those still in
        their handshake; wait at most ``settle`` seconds for the handlers, then cancel
        them (and wait for that)."""
        self.serving = False
        timeout = self.settings.close_timeout
        opened = list(self.server.all_connections)
        await asyncio.gather(*(close_within(c, code, "", timeout) for c in opened))
        tasks = list(self.server.handler_tasks)
        if tasks:
            _done, late = await asyncio.wait(tasks, timeout=settle)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)

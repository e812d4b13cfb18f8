"""WebSocket upgrades received by the HTTP listener, handed to the WebSocket relay.

What belongs here: :class:`Upgrades`. The HTTP listener (:mod:`acp_proxy.relay.http`) reads
a connection's first request itself; when it is a WebSocket upgrade, the connection's
transport is handed over (:class:`acp_proxy.transports.ws_handover.HandOver`) with the
hooks of the WebSocket relay, and from then on it is exactly a connection of
``acp-proxy ws``: the same admission, the same relay, one ``ws`` capture
(:mod:`acp_proxy.relay.listener`).
"""

from __future__ import annotations

import asyncio

from acp_proxy.record.link import RecorderLink
from acp_proxy.relay.config import ServeConfig
from acp_proxy.relay.core.capacity import Capacity
from acp_proxy.relay.listener import WsFront
from acp_proxy.transports.websocket import RelayServerConnection
from acp_proxy.transports.ws_handover import HandOver

__all__ = ["Upgrades"]


class Upgrades:
    """Turns accepted connections into WebSocket relay connections."""

    def __init__(
        self, config: ServeConfig, writer: RecorderLink, capacity: Capacity, listen_url: str
    ) -> None:
        self.front = WsFront(config, writer)
        self.front.capacity = capacity  # one listener, one limit for both transports
        self.front.listen_url = listen_url
        self.hand_over = HandOver(
            self.front.handler,
            config.settings,
            timeouts=config.timeouts,
            process_request=self.front.process_request,
            process_response=self.front.process_response,
            select_subprotocol=self.front.select_subprotocol,
            connection=RelayServerConnection,
        )

    def take(self, transport: asyncio.Transport, received: bytes) -> None:
        """``transport`` is a WebSocket connection from now on; ``received`` is everything
        read from it so far (the upgrade request, perhaps more)."""
        self.hand_over.take(transport, received)

    async def close(self, settle: float) -> None:
        """Close open WebSocket connections with 1001 (going away), as ``ws`` does on a
        signal, and wait (at most ``settle`` seconds) for their sessions to be recorded."""
        await self.hand_over.close(1001, settle)
        await self.front.tasks.settle(settle)
        self.front.refusals.close()

"""The Streamable HTTP man in the middle: the listener.

What belongs here: :func:`serve`, a listener for ACP's HTTP endpoint that relays every
request to the upstream's (POSTs of JSON-RPC messages, event-stream GETs, DELETE). A
connection's first bytes say what it is:

- an HTTP/2 connection preface: HTTP/2 with prior knowledge
  (:mod:`acp_proxy.relay.http.h2`, every stream relayed at once);
- a WebSocket upgrade: handed to the WebSocket relay
  (:mod:`acp_proxy.relay.http.upgrade`), so one listener serves both transports as the
  agent does;
- any other request: HTTP/1.1 (:mod:`acp_proxy.relay.http.h1`), which may ask for
  HTTP/2 with ``Upgrade: h2c``.

Admission is ``ws``'s: the ``Host``, token and origin rules of
:class:`acp_proxy.relay.core.admission.Admission` apply to every request, connections are
accepted by :class:`acp_proxy.transports.accept.Acceptor` (which survives running out of
descriptors) and held to the listener's timeouts (a head, a body, an idle wait:
:class:`acp_proxy.transports.timeouts.Timeouts`), and the listener's
:class:`acp_proxy.relay.core.capacity.Capacity` counts connections of both transports (an
HTTP/2 connection once more for each stream beyond the first at once). Which capture a
request belongs to is :mod:`acp_proxy.relay.http.connections`; what crosses and what is
recorded is docs/http.md. What the connections share is
:class:`acp_proxy.relay.http.front.Front`.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable

import h11

from acp_proxy.record.link import RecorderLink
from acp_proxy.relay import warn
from acp_proxy.relay.config import ServeConfig
from acp_proxy.relay.core.admission import check_listen_address
from acp_proxy.relay.http.front import Front
from acp_proxy.relay.http.h1 import H1ClientConnection
from acp_proxy.relay.http.h2 import H2ClientConnection
from acp_proxy.relay.http.upgrade import Upgrades
from acp_proxy.transports.accept import Acceptor, listening_sockets
from acp_proxy.transports.http.legs import ClientLeg, FirstRequest

__all__ = ["serve", "ws_url_of"]


def ws_url_of(url: str) -> str:
    """The WebSocket URL of the same endpoint (``http`` → ``ws``, ``https`` → ``wss``)."""
    scheme, rest = url.split(":", 1)
    return ("wss" if scheme.lower() == "https" else "ws") + ":" + rest


def _is_upgrade(request: h11.Request) -> bool:
    ups = [v.lower() for k, v in request.headers if k == b"upgrade"]
    return request.method == b"GET" and ups == [b"websocket"]


def _first_request(front: Front) -> FirstRequest:
    """What a connection is, from its first bytes: HTTP/2, a WebSocket, or HTTP/1.1."""

    def first(leg: ClientLeg, request: h11.Request | None, raw: bytes) -> None:
        assert leg.transport is not None
        if request is None:  # the HTTP/2 preface
            h2 = H2ClientConnection(front, prior_knowledge=True)
            h2.leg.start(leg.transport, raw)
            front.run(h2.run())
        elif _is_upgrade(request) and front.upgrades is not None:
            front.upgrades.take(leg.transport, raw)
        else:
            front.run(H1ClientConnection(front, leg).run())

    return first


async def serve(
    config: ServeConfig,
    writer: RecorderLink,
    stop: asyncio.Event,
    *,
    ready: Callable[[str], None] | None = None,
) -> None:
    """Listen until ``stop`` is set; then end open exchanges (event streams are cut, and
    recorded as ended by us), close WebSocket connections with 1001, end every capture."""
    check_listen_address(config.host, config.admission.token)
    assert config.upstream is not None
    front = Front(config, writer)
    first = _first_request(front)
    sockets = listening_sockets(config.host, config.port)
    acceptor = Acceptor(sockets, lambda: ClientLeg(first, config.timeouts), warn)
    host, port = sockets[0].getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    front.acp.listen_url = f"http://{shown}:{port}"
    ws_config = dataclasses.replace(config, upstream=ws_url_of(config.upstream))
    front.upgrades = Upgrades(ws_config, writer, front.capacity, f"ws://{shown}:{port}")
    if ready is not None:
        ready(front.acp.listen_url)
    try:
        await stop.wait()
    finally:
        acceptor.close()
        await front.shutdown()

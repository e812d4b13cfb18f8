"""What a relayed HTTP exchange looks like from either leg, whichever HTTP it speaks.

What belongs here: the interface the legs share, none of their I/O (asyncio is imported for
its types only): :class:`ClientRequest`, a request from the client and the way back to it,
as an HTTP/1.1 request (:class:`acp_proxy.transports.http.legs.H1Request`) and an HTTP/2
stream (:class:`acp_proxy.transports.http.h2client.H2Request`) both provide it;
:class:`End`, the end of a body; the errors the legs raise (:class:`ClientGone`,
:class:`ClientTimeout`, :class:`UpstreamDropped`).
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Protocol

__all__ = [
    "ClientGone",
    "ClientRequest",
    "ClientTimeout",
    "End",
    "UpstreamDropped",
    "describe",
    "peer_of",
]

Raw = list[tuple[bytes, bytes]]


class ClientGone(Exception):
    """The client closed or lost its connection (or, over HTTP/2, reset the stream)."""


class ClientTimeout(ClientGone):
    """The client did not send in time what it had to (a request's head or its body,
    :class:`acp_proxy.transports.timeouts.Timeouts`): answered 408 where it still can be,
    then the connection (or the HTTP/2 stream) is ended."""


class UpstreamDropped(Exception):
    """The upstream cut its answer short: the connection or the stream ended mid-body."""


@dataclasses.dataclass(frozen=True, slots=True)
class End:
    """The end of a body, and its trailers."""

    trailers: Raw


def describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


def peer_of(transport: asyncio.BaseTransport | None) -> str:
    p = transport.get_extra_info("peername") if transport else None
    return f"{p[0]}:{p[1]}" if p else "?"


class ClientRequest(Protocol):
    """A request from the client and the way back to it. ``headers`` are its fields as
    received (HTTP/2: without the pseudo-header fields, ``:authority`` being
    ``authority``); ``gone`` is set when the client left (HTTP/2: or reset the stream);
    ``read_body`` gives the whole body, or its size so far once over the limit."""

    version: str
    method: bytes
    target: bytes
    authority: bytes
    headers: Raw
    gone: asyncio.Event

    @property
    def peer(self) -> str: ...
    @property
    def lost(self) -> bool: ...
    def request_done(self) -> bool: ...
    async def read_body(self, limit: int) -> bytes | int: ...
    async def send_informational(self, status: int, headers: Raw) -> None: ...
    async def send_head(
        self, status: int, reason: bytes, headers: Raw, length: int | None
    ) -> None: ...
    async def send_data(self, data: bytes) -> None: ...
    async def send_end(self, trailers: Raw) -> None: ...
    def abort(self, code: int = ...) -> None: ...

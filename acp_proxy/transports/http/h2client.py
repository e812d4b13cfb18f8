"""The client's HTTP/2 leg on ``h2``: a connection a client made to us, many streams at
once, with nothing of our own.

What belongs here: :class:`H2ClientLeg`, the asyncio protocol of an HTTP/2 connection
(prior knowledge, or upgraded from HTTP/1.1 with ``Upgrade: h2c``), and
:class:`H2Request`, one stream of it: the request it carries, its body read, its answer
sent. A new stream is handed to ``on_request`` as it opens; relaying and recording are
:mod:`acp_proxy.relay.http`. Flow control and bounded memory are
:mod:`acp_proxy.transports.http.h2base`.
"""

from __future__ import annotations

import asyncio
import contextlib
import http
from collections.abc import Callable
from typing import Any

import h2.errors
import h2.events

from acp_proxy.transports.http.common import ClientGone, ClientTimeout, peer_of
from acp_proxy.transports.http.h2base import H2Protocol, H2Stream, StreamGone
from acp_proxy.transports.timeouts import Timeouts

__all__ = ["H2ClientLeg", "H2Request", "reason_of"]

Raw = list[tuple[bytes, bytes]]
OnRequest = Callable[["H2Request"], None]


def reason_of(status: int) -> bytes:
    """The standard reason phrase of ``status`` (HTTP/2 carries none)."""
    try:
        return http.HTTPStatus(status).phrase.encode("latin-1")
    except ValueError:
        return b""


class H2ClientLeg(H2Protocol):
    """A client's HTTP/2 connection. ``start`` takes the transport over with the bytes read
    so far (the preface, or what followed an upgrade). With no stream open for
    ``timeouts.idle`` seconds it is closed (``GOAWAY``), and so it is when the client
    reads nothing for as long."""

    def __init__(self, on_request: OnRequest, timeouts: Timeouts | None = None) -> None:
        super().__init__(client_side=False)
        self.on_request = on_request
        self.timeouts = timeouts or Timeouts()
        self.closed = asyncio.Event()
        self.peer = "?"
        self._idle: asyncio.TimerHandle | None = None

    def start(
        self,
        transport: asyncio.Transport,
        received: bytes,
        upgrade: tuple[bytes, H2Request] | None = None,
    ) -> None:
        """Begin on ``transport``; ``upgrade``: the ``HTTP2-Settings`` of an HTTP/1.1
        request that asked for ``h2c``, and that request, now stream 1."""
        self.transport = transport
        self.peer = peer_of(transport)
        self.side.stall, self.side.drop = self.timeouts.idle, transport.abort
        self.side.emptied = self._arm_idle
        self.begin(upgrade[0] if upgrade is not None else None)
        transport.set_protocol(self)
        transport.resume_reading()
        if upgrade is not None:
            request = upgrade[1]
            self.side.streams[1] = request.stream
            self.on_request(request)
        if received:
            self.data_received(received)
        if not self.side.streams:
            self._arm_idle()

    def _arm_idle(self) -> None:
        self._disarm()
        if self.side.lost is None:
            loop = asyncio.get_running_loop()
            self._idle = loop.call_later(self.timeouts.idle, self._idle_out)

    def _disarm(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None

    def _idle_out(self) -> None:
        self._idle = None
        if not self.side.streams:
            self.close()

    def event(self, event: Any) -> None:
        if isinstance(event, h2.events.RequestReceived):
            self._disarm()
            stream = H2Stream(event.stream_id)
            self.side.streams[event.stream_id] = stream
            self.on_request(H2Request(self, stream, list(event.headers)))
        elif not isinstance(event, h2.events.ConnectionTerminated):
            # (a GOAWAY from the client: no new streams; those it began may finish)
            self.side.handle(event)

    def lose(self, reason: str) -> None:
        self._disarm()
        super().lose(reason)
        self.closed.set()

    def close(self) -> None:
        """End the connection (GOAWAY, then close)."""
        if self.side.lost is None:
            with contextlib.suppress(Exception):
                self.side.conn.close_connection()
                self.side.flush()
        if self.transport is not None:
            self.transport.close()


class H2Request:
    """One stream of a client's HTTP/2 connection: its request and its answer.

    ``headers`` are the request's fields as received, without the pseudo-header fields,
    whose values are ``method``, ``target`` (``:path``) and ``authority``."""

    version = "2"

    def __init__(self, leg: H2ClientLeg, stream: H2Stream, headers: Raw) -> None:
        self.leg = leg
        self.stream = stream
        pseudo = {k: v for k, v in headers if k.startswith(b":")}
        self.method = pseudo.get(b":method", b"GET")
        self.target = pseudo.get(b":path", b"/")
        self.authority = pseudo.get(b":authority", b"")
        self.headers = [(k, v) for k, v in headers if not k.startswith(b":")]
        self.gone = stream.dead  # the client reset the stream or left (or we cut it)
        self._answered = False  # our side of the stream ended

    @classmethod
    def upgraded(cls, leg: H2ClientLeg, method: bytes, target: bytes, headers: Raw) -> H2Request:
        """The HTTP/1.1 request that asked for ``h2c``: stream 1, its body (none) read."""
        stream = H2Stream(1)
        stream.ended = True
        stream.push("end", [])
        request = cls(leg, stream, [(b":method", method), (b":path", target)])
        request.headers = headers
        hosts = [v for k, v in headers if k.lower() == b"host"]
        request.authority = hosts[0] if hosts else b""
        return request

    @property
    def peer(self) -> str:
        return self.leg.peer

    @property
    def lost(self) -> bool:
        return self.stream.cut is not None

    def request_done(self) -> bool:
        return True  # streams are not reused

    async def read_body(self, limit: int) -> bytes | int:
        """The whole body, within ``timeouts.body`` (else :class:`ClientTimeout`); or its
        size so far once over ``limit``."""
        seconds = self.leg.timeouts.body
        try:
            async with asyncio.timeout(seconds):
                return await self._read_body(limit)
        except TimeoutError:
            raise ClientTimeout(f"request body not received within {seconds:g} s") from None

    async def _read_body(self, limit: int) -> bytes | int:
        body = bytearray()
        while True:
            try:
                item = await self.stream.next()
            except StreamGone as e:
                raise ClientGone(str(e)) from e
            if item[0] == "end":
                return bytes(body)
            if item[0] == "data":
                body += item[1]
                self.leg.side.consumed(self.stream, item[2])
                if len(body) > limit:
                    return len(body)

    async def send_informational(self, status: int, headers: Raw) -> None:
        self._send_headers([(b":status", b"%d" % status), *_lower(headers)])

    async def send_head(self, status: int, reason: bytes, headers: Raw, length: int | None) -> None:
        """The answer's head (``reason`` is not carried); ``length``: its body's, when
        known."""
        out = [(b":status", b"%d" % status), *_lower(headers)]
        if length is not None and status not in (204, 304):
            out.append((b"content-length", b"%d" % length))
        self._send_headers(out)  # the stream ends with send_end, a body or none

    def _send_headers(self, headers: Raw, *, end: bool = False) -> None:
        try:
            self.leg.side.send_headers(self.stream, headers, end=end)
        except StreamGone as e:
            raise ClientGone(str(e)) from e

    async def send_data(self, data: bytes) -> None:
        try:
            await self.leg.side.send_data(self.stream, data)
        except StreamGone as e:
            raise ClientGone(str(e)) from e

    async def send_end(self, trailers: Raw) -> None:
        side = self.leg.side
        try:
            side.end_stream(self.stream, _lower(trailers))
        except StreamGone as e:
            raise ClientGone(str(e)) from e
        self._answered = True
        side.forget(self.stream)  # the rest of a body not read is taken and dropped

    def abort(self, code: int = h2.errors.ErrorCodes.INTERNAL_ERROR) -> None:
        """Cut the stream, so the client sees its answer cut short as we did."""
        self._answered = True
        self.leg.side.reset(self.stream, code)

    def close(self) -> None:
        """The exchange is over: a stream it left unanswered is cut, never left hanging."""
        if self._answered:
            self.leg.side.forget(self.stream)
        else:
            self.abort()


def _lower(headers: Raw) -> Raw:
    """Field names as HTTP/2 requires them: lower case."""
    return [(k.lower(), v) for k, v in headers]

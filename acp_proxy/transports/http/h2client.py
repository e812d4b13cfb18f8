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

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions

from acp_proxy.transports.http.common import ClientGone, peer_of
from acp_proxy.transports.http.h2base import H2Side, H2Stream, StreamGone
from acp_proxy.transports.http.legs import MAX_HEAD

__all__ = ["H2ClientLeg", "H2Request", "reason_of"]

Raw = list[tuple[bytes, bytes]]
OnRequest = Callable[["H2Request"], None]


def reason_of(status: int) -> bytes:
    """The standard reason phrase of ``status`` (HTTP/2 carries none)."""
    try:
        return http.HTTPStatus(status).phrase.encode("latin-1")
    except ValueError:
        return b""


class H2ClientLeg(asyncio.Protocol):
    """A client's HTTP/2 connection. ``start`` takes the transport over with the bytes read
    so far (the preface, or what followed an upgrade)."""

    def __init__(self, on_request: OnRequest) -> None:
        config = h2.config.H2Configuration(
            client_side=False, header_encoding=None, validate_inbound_headers=True
        )
        self.side = H2Side(h2.connection.H2Connection(config=config), self._write)
        self.on_request = on_request
        self.transport: asyncio.Transport | None = None
        self.closed = asyncio.Event()
        self.peer = "?"

    def _write(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

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
        conn = self.side.conn
        conn.local_settings.max_header_list_size = MAX_HEAD
        if upgrade is not None:
            conn.initiate_upgrade_connection(upgrade[0])
        else:
            conn.initiate_connection()
        conn.update_settings(self.side.settings())
        self.side.open_windows()
        self.side.flush()
        transport.set_protocol(self)
        transport.resume_reading()
        if upgrade is not None:
            request = upgrade[1]
            self.side.streams[1] = request.stream
            self.on_request(request)
        if received:
            self.data_received(received)

    # -- asyncio callbacks ----------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        try:
            events = self.side.conn.receive_data(data)
        except h2.exceptions.ProtocolError as e:
            self.side.flush()  # h2 wrote a GOAWAY saying why
            self._lose(f"HTTP/2 protocol error: {e}")
            if self.transport is not None:
                self.transport.close()
            return
        for event in events:
            self._event(event)
        self.side.flush()

    def _event(self, event: Any) -> None:
        side = self.side
        if isinstance(event, h2.events.RequestReceived):
            stream = H2Stream(event.stream_id)
            side.streams[event.stream_id] = stream
            self.on_request(H2Request(self, stream, list(event.headers)))
        elif isinstance(event, h2.events.ConnectionTerminated):
            # the client is done: no new streams; those it began may finish
            pass
        else:
            side.handle(event)

    def connection_lost(self, exc: Exception | None) -> None:
        self._lose("the client closed the connection")

    def _lose(self, reason: str) -> None:
        self.side.connection_gone(reason)
        self.closed.set()

    def pause_writing(self) -> None:
        self.side.writable.clear()

    def resume_writing(self) -> None:
        self.side.writable.set()

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
        """The whole body; or its size so far once over ``limit``."""
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
        if not self.stream.ended:  # answered before the request was whole: no more of it
            side.reset(self.stream, h2.errors.ErrorCodes.NO_ERROR)
        side.forget(self.stream)

    def abort(self, code: int = h2.errors.ErrorCodes.INTERNAL_ERROR) -> None:
        """Cut the stream, so the client sees its answer cut short as we did."""
        self.leg.side.reset(self.stream, code)

    def close(self) -> None:
        self.leg.side.forget(self.stream)


def _lower(headers: Raw) -> Raw:
    """Field names as HTTP/2 requires them: lower case."""
    return [(k.lower(), v) for k, v in headers]

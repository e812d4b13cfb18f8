"""HTTP/1.1 legs on ``h11``, with nothing of our own.

What belongs here: :class:`ClientLeg`, the asyncio protocol of a connection a client made
to us (and the sniffing of its first bytes: an HTTP/2 connection preface is handed on
whole), :class:`H1Request`, one request of it with its answer, and :class:`UpstreamLeg`,
our connection to the upstream. ``h11`` parses and frames
the messages (a well-tried parser, written to the RFCs, without I/O of its own); these
classes move bytes and events between it and the sockets. No relaying logic and no
recording here: that is :mod:`acp_proxy.relay.http`.

- Nothing is added: ``h11`` writes no ``Server``, ``Date`` or other header of its own;
  header names go out spelled as they came.
- Bytes are written to the socket as soon as an event is sent (the socket has
  ``TCP_NODELAY``, asyncio's default), so a server-sent event is not held back.
- Bounded memory: a client's bytes not yet parsed are at most :data:`READ_LIMIT` (reading
  stops until they are), a head at most :data:`MAX_HEAD`; writes wait for the socket
  (asyncio's write buffer limits), so a slow reader pushes back on the sender.
- The first request of a client connection is parsed in the protocol callback, so that a
  WebSocket upgrade can take the connection over with every byte read so far.
- Bounded time (:class:`acp_proxy.transports.timeouts.Timeouts`): a request head, its
  body, the wait for the next request and a client reading nothing of what it is sent
  each have a timeout; a client that closes before a whole head is closed at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Callable
from typing import Any

import h11

from acp_proxy.transports.http.common import ClientGone, ClientTimeout, peer_of
from acp_proxy.transports.timeouts import Timeouts, plain_answer

__all__ = ["MAX_HEAD", "READ_LIMIT", "ClientLeg", "H1Request", "UpstreamLeg"]

MAX_HEAD = 64 * 1024
READ_LIMIT = 256 * 1024
_CHUNK = 64 * 1024


_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"  # an HTTP/2 connection with prior knowledge

Raw = list[tuple[bytes, bytes]]


# ``first(leg, request, raw)``; ``request`` is None when the bytes are an HTTP/2 preface
FirstRequest = Callable[["ClientLeg", h11.Request | None, bytes], None]


class ClientLeg(asyncio.Protocol):
    """A client's connection. ``first(leg, request, raw)`` is called (in the callback) with
    the first request and every byte read so far, and may take the transport over (a
    WebSocket upgrade, HTTP/2: the leg then sees nothing more). The first request's head
    must come within ``timeouts.head`` of the connection's opening."""

    def __init__(self, first: FirstRequest, timeouts: Timeouts | None = None) -> None:
        self._first = first
        self.timeouts = timeouts or Timeouts()
        self._timer: asyncio.TimerHandle | None = None
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
        self.transport: asyncio.Transport | None = None
        self.request: h11.Request | None = None
        self._raw: bytearray | None = bytearray()
        self._pending = bytearray()
        self._paused = False
        self._arrived = asyncio.Event()
        self._writable = asyncio.Event()
        self._writable.set()
        self._eof = False
        self._eof_fed = False
        self.gone = asyncio.Event()  # EOF from the client, or the connection lost
        self.lost = False

    @property
    def peer(self) -> str:
        return peer_of(self.transport)

    # -- asyncio callbacks ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(self.timeouts.head, self._head_late)

    def _head_late(self) -> None:
        """The first head did not come in time: 408 when part of it came, else closed."""
        self._timer = None
        if self._raw is None or self.transport is None:
            return
        if self._raw:
            self._refuse(408, f"request head not received within {self.timeouts.head:g} s")
        else:
            self.transport.close()
        self._raw = None

    def _refuse(self, status: int, message: str) -> None:
        assert self.transport is not None
        self.transport.write(plain_answer(status, message))
        self.transport.close()

    def _sniffed(self) -> None:
        self._raw = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def data_received(self, data: bytes) -> None:
        if self._raw is not None:
            self._sniff(data)
            return
        self._pending += data
        self._arrived.set()
        if len(self._pending) > READ_LIMIT and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()

    def _sniff(self, data: bytes) -> None:
        assert self._raw is not None and self.transport is not None
        self._raw += data
        if _PREFACE.startswith(bytes(self._raw[:24])):
            if len(self._raw) >= len(_PREFACE):
                raw = bytes(self._raw)
                self._sniffed()
                self._first(self, None, raw)
            return  # all of it, or the start of a preface
        try:
            self.h11.receive_data(data)
            event = self.h11.next_event()
        except h11.RemoteProtocolError as e:
            self._sniffed()
            self._refuse(e.error_status_hint, f"bad request ({e})")
            return
        if event is h11.NEED_DATA:
            return
        assert isinstance(event, h11.Request)
        raw = bytes(self._raw)
        self._sniffed()
        self.request = event
        self._first(self, event, raw)

    def eof_received(self) -> bool:
        if self._raw is not None:  # closed before a whole head: nothing to answer
            self._sniffed()
            return False  # asyncio closes the transport, freeing its descriptor now
        self._eof = True
        self._arrived.set()
        self.gone.set()
        return True  # we close once the exchange is recorded

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._eof = self.lost = True
        self._arrived.set()
        self._writable.set()
        self.gone.set()

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    # -- for the relay --------------------------------------------------------------------

    async def next_event(self) -> Any:
        """The next ``h11`` event from the client (``h11.ConnectionClosed`` at its end)."""
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            if self._pending:
                data = bytes(self._pending)
                self._pending.clear()
                if self._paused and self.transport is not None:
                    self._paused = False
                    self.transport.resume_reading()
                self.h11.receive_data(data)
            elif self._eof and not self._eof_fed:
                self._eof_fed = True
                self.h11.receive_data(b"")
            elif self._eof:
                return h11.ConnectionClosed()
            else:
                self._arrived.clear()
                await self._arrived.wait()

    async def next_request(self) -> Any:
        """The next request of a kept-alive connection (its first ``h11`` event): its
        first byte must come within ``timeouts.idle``, then its head within
        ``timeouts.head`` (or it is answered 408); ``h11.ConnectionClosed`` when the client
        closed or a wait ran out."""
        event = self.h11.next_event()  # a request sent before the last answer ended
        if event is not h11.NEED_DATA:
            return event
        try:
            async with asyncio.timeout(self.timeouts.idle):
                while not self._pending and not self._eof:
                    self._arrived.clear()
                    await self._arrived.wait()
        except TimeoutError:
            return h11.ConnectionClosed()
        try:
            async with asyncio.timeout(self.timeouts.head):
                return await self.next_event()
        except TimeoutError:
            if self.transport is not None and not self.lost:
                self._refuse(408, f"request head not received within {self.timeouts.head:g} s")
            return h11.ConnectionClosed()

    async def send(self, event: Any) -> None:
        if self.lost or self.transport is None or self.transport.is_closing():
            raise ClientGone
        data = self.h11.send(event)
        if data:
            self.transport.write(data)
        await self.drained()
        if self.lost:
            raise ClientGone

    async def drained(self) -> None:
        """Until the socket takes more; a client that reads nothing for
        ``timeouts.idle`` is dropped (:class:`ClientGone`)."""
        if self._writable.is_set():
            return
        try:
            async with asyncio.timeout(self.timeouts.idle):
                await self._writable.wait()
        except TimeoutError:
            self.abort()
            raise ClientGone(f"the client read nothing for {self.timeouts.idle:g} s") from None

    def reusable(self) -> bool:
        """Ready for the next request on this connection (both sides done, keep-alive)."""
        c = self.h11
        if c.our_state is h11.DONE and c.their_state is h11.DONE and not self.lost:
            c.start_next_cycle()
            return True
        return False

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        """Drop the connection, so the client sees a body cut short as we did."""
        if self.transport is not None:
            self.transport.abort()

    def hand_over(self) -> tuple[asyncio.Transport, bytes]:
        """After a ``101 Switching Protocols``: the transport, and every byte read from it
        that HTTP/1.1 did not use; the leg lets go of it."""
        assert self.transport is not None
        transport, self.transport = self.transport, None
        rest = self.h11.trailing_data[0] + bytes(self._pending)
        self._pending.clear()
        return transport, rest


class H1Request:
    """One request of a client's HTTP/1.1 connection, and its answer."""

    version = "1.1"
    authority = b""  # HTTP/1.1 says it in Host

    def __init__(self, leg: ClientLeg, request: h11.Request) -> None:
        self.leg = leg
        self.method = request.method
        self.target = request.target
        self.headers: Raw = list(request.headers.raw_items())
        self.gone = leg.gone
        self._chunked = False

    @property
    def peer(self) -> str:
        return self.leg.peer

    @property
    def lost(self) -> bool:
        return self.leg.lost

    def request_done(self) -> bool:
        return self.leg.h11.their_state is h11.DONE

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
        leg = self.leg
        if leg.h11.they_are_waiting_for_100_continue:
            await leg.send(h11.InformationalResponse(status_code=100, headers=[]))
        body = bytearray()
        while True:
            event = await leg.next_event()
            if isinstance(event, h11.Data):
                body += event.data
                if len(body) > limit:
                    return len(body)
            elif isinstance(event, h11.EndOfMessage):
                return bytes(body)
            else:
                raise ClientGone

    async def send_informational(self, status: int, headers: Raw) -> None:
        await self.leg.send(h11.InformationalResponse(status_code=status, headers=headers))

    async def send_head(self, status: int, reason: bytes, headers: Raw, length: int | None) -> None:
        """The answer's head; ``length``: its body's, when known (else it goes chunked)."""
        out = list(headers)
        if self.method == b"HEAD" or status == 304:
            out += [(b"Content-Length", b"%d" % length)] if length is not None else []
        elif status != 204:
            self._chunked = length is None
            out.append(
                (b"Transfer-Encoding", b"chunked")
                if length is None
                else (b"Content-Length", b"%d" % length)
            )
        await self.leg.send(h11.Response(status_code=status, headers=out, reason=reason))

    async def send_data(self, data: bytes) -> None:
        await self.leg.send(h11.Data(data=data))

    async def send_end(self, trailers: Raw) -> None:
        await self.leg.send(h11.EndOfMessage(headers=trailers if self._chunked else []))

    def abort(self, code: int = 0) -> None:
        self.leg.abort()


class UpstreamLeg:
    """Our connection to the upstream: one request at a time (HTTP/1.1)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEAD)
        self.used = False

    @classmethod
    async def open(cls, host: str, port: int, *, tls: bool, timeout: float) -> UpstreamLeg:
        context = ssl.create_default_context() if tls else None
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(
                host, port, ssl=context, server_hostname=host if tls else None, limit=_CHUNK
            )
        return cls(reader, writer)

    async def send(self, event: Any) -> None:
        data = self.h11.send(event)
        if data:
            self.writer.write(data)
            await self.writer.drain()

    async def next_event(self) -> Any:
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            self.h11.receive_data(await self.reader.read(_CHUNK))

    def reusable(self) -> bool:
        c = self.h11
        if c.our_state is h11.DONE and c.their_state is h11.DONE:
            c.start_next_cycle()
            self.used = True
            return True
        return False

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()

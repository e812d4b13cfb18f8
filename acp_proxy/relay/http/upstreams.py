"""The upstream connections of one client connection, HTTP/1.1 or HTTP/2.

What belongs here: :class:`Upstreams`, which sends a relayed request upstream and gives
back its answer as a :class:`Reply` (status, headers, body pieces), whichever HTTP the
upstream leg speaks; and the request head each version needs. Which version a client
connection's upstream leg speaks is the listener's choice (``--upstream-http2``,
docs/http.md):

- HTTP/1.1: one request at a time per upstream connection, so a client connection uses
  as many as it has exchanges at once (an HTTP/2 client's streams), kept alive and reused;
  a kept-alive one the upstream closed meanwhile is replaced once, before anything of the
  answer was read;
- HTTP/2 (cleartext, prior knowledge): one connection per client connection, a stream per
  exchange; a connection the upstream closed or ended (GOAWAY) is replaced for the next.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import h11

from acp_proxy.errors import UpstreamError
from acp_proxy.transports.http.common import End, UpstreamDropped, describe
from acp_proxy.transports.http.h2base import H2Stream, StreamGone
from acp_proxy.transports.http.h2client import reason_of
from acp_proxy.transports.http.h2upstream import H2Upstream
from acp_proxy.transports.http.headers import framing, get_all
from acp_proxy.transports.http.legs import UpstreamLeg

__all__ = ["Reply", "Upstreams"]

Raw = list[tuple[bytes, bytes]]
Informational = Callable[[int, Raw], Awaitable[None]]


class Reply:
    """The head of an upstream's answer, and its body to read piece by piece."""

    version = "1.1"

    def __init__(self, status: int, reason: bytes, headers: Raw) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers  # as received (HTTP/2: without pseudo-header fields)
        self.whole = False  # the body was read to its end

    async def next_piece(self) -> bytes | End:
        """The next piece of the body, or its :class:`End`; :class:`UpstreamDropped`
        when it was cut short."""
        raise NotImplementedError

    def consumed(self) -> None:
        """The last piece was relayed (HTTP/2: the upstream may send that much more)."""


class _H1Reply(Reply):
    def __init__(self, leg: UpstreamLeg, response: h11.Response) -> None:
        super().__init__(response.status_code, response.reason, list(response.headers.raw_items()))
        self.leg = leg

    async def next_piece(self) -> bytes | End:
        try:
            event = await self.leg.next_event()
        except (OSError, h11.ProtocolError) as e:
            raise UpstreamDropped(describe(e)) from e
        if isinstance(event, h11.Data):
            return bytes(event.data)
        if isinstance(event, h11.EndOfMessage):
            self.whole = True
            return End(list(event.headers.raw_items()))
        raise UpstreamDropped(f"unexpected {type(event).__name__}")


class _H2Reply(Reply):
    version = "2"

    def __init__(self, up: H2Upstream, stream: H2Stream, status: int, headers: Raw) -> None:
        super().__init__(status, reason_of(status), headers)
        self.up = up
        self.stream = stream
        self._unacked = 0

    async def next_piece(self) -> bytes | End:
        while True:
            try:
                item = await self.stream.next()
            except StreamGone as e:
                raise UpstreamDropped(str(e)) from e
            if item[0] == "data":
                self._unacked = item[2]
                return bytes(item[1])
            if item[0] == "end":
                self.whole = True
                return End(item[1])

    def consumed(self) -> None:
        self.up.side.consumed(self.stream, self._unacked)
        self._unacked = 0


def _length(client_headers: Raw, body: bytes) -> Raw:
    """The body's length for the upstream, when the client's framing leaves it out
    (an HTTP/2 request may have none)."""
    return [(b"content-length", b"%d" % len(body))] if body else []


class Upstreams:
    def __init__(
        self, host: str, port: int, netloc: bytes, *, tls: bool, http2: bool, timeout: float
    ) -> None:
        self.host, self.port, self.netloc, self.tls = host, port, netloc, tls
        self.http2 = http2
        self.timeout = timeout
        self.idle: list[UpstreamLeg] = []
        self.busy: set[UpstreamLeg] = set()
        self.h2: H2Upstream | None = None

    async def round_trip(
        self, method: bytes, path: bytes, client_headers: Raw, relayed: Raw, body: bytes,
        informational: Informational,
    ) -> Reply:  # fmt: skip
        """Send the request (``relayed``: its end-to-end headers); the answer's head, 1xx
        answers handed to ``informational``. :class:`~acp_proxy.errors.UpstreamError` when none
        came: the upstream could not be reached, or failed before its head."""
        try:
            if self.http2:
                return await self._h2(method, path, client_headers, relayed, body, informational)
            return await self._h1(method, path, client_headers, relayed, body, informational)
        except (OSError, TimeoutError, h11.ProtocolError, StreamGone) as e:
            raise UpstreamError(describe(e)) from e

    async def _h1(
        self, method: bytes, path: bytes, client_headers: Raw, relayed: Raw, body: bytes,
        informational: Informational,
    ) -> Reply:  # fmt: skip
        headers = [(b"Host", self.netloc), *relayed]
        headers += framing(client_headers, request=True) or _length(client_headers, body)
        request = h11.Request(method=method, target=path, headers=headers)
        for _attempt in (0, 1):
            leg, reused = await self._h1_leg()
            try:
                await leg.send(request)
                if body:
                    await leg.send(h11.Data(data=body))
                await leg.send(h11.EndOfMessage())
                event = await leg.next_event()
                break
            except (OSError, h11.RemoteProtocolError):
                self._drop(leg)
                if not reused:
                    raise
        while isinstance(event, h11.InformationalResponse):
            await informational(event.status_code, list(event.headers.raw_items()))
            event = await leg.next_event()
        if not isinstance(event, h11.Response):
            self._drop(leg)
            raise h11.RemoteProtocolError(f"unexpected {type(event).__name__}")
        return _H1Reply(leg, event)

    async def _h1_leg(self) -> tuple[UpstreamLeg, bool]:
        while self.idle:
            leg = self.idle.pop()
            if leg.reusable():
                self.busy.add(leg)
                return leg, True
            leg.close()
        leg = await UpstreamLeg.open(self.host, self.port, tls=self.tls, timeout=self.timeout)
        self.busy.add(leg)
        return leg, False

    def _drop(self, leg: UpstreamLeg) -> None:
        self.busy.discard(leg)
        leg.close()

    async def _h2(
        self, method: bytes, path: bytes, client_headers: Raw, relayed: Raw, body: bytes,
        informational: Informational,
    ) -> Reply:  # fmt: skip
        headers = [
            (b":method", method),
            (b":scheme", b"http"),
            (b":authority", self.netloc),
            (b":path", path),
            *[(k.lower(), v) for k, v in relayed],
        ]
        lengths = get_all(client_headers, b"content-length")
        headers += [(b"content-length", lengths[0])] if lengths else _length(client_headers, body)
        for attempt in (0, 1):
            up, reused = await self._h2_connection()
            stream: H2Stream | None = None
            try:
                stream = await up.request(headers, body)
                return await self._h2_head(up, stream, informational)
            except (OSError, StreamGone):
                if stream is not None:
                    up.done(stream, whole=False)
                # sent again only when the upstream did not take it: a connection it had
                # closed meanwhile, or a stream it refused (GOAWAY, REFUSED_STREAM)
                untaken = (reused and stream is None) or (stream is not None and stream.refused)
                if attempt or not untaken:
                    raise
                up.goaway = True  # not to be used again
            except BaseException:
                if stream is not None:
                    up.done(stream, whole=False)
                raise
        raise AssertionError("unreachable")

    async def _h2_connection(self) -> tuple[H2Upstream, bool]:
        """The HTTP/2 connection, opened if need be; and whether it was reused."""
        if self.h2 is not None and self.h2.usable():
            return self.h2, True
        if self.h2 is not None:
            self.h2.close()
        self.h2 = None
        self.h2 = await H2Upstream.open(self.host, self.port, timeout=self.timeout)
        return self.h2, False

    async def _h2_head(
        self, up: H2Upstream, stream: H2Stream, informational: Informational
    ) -> Reply:
        while True:
            item = await stream.next()
            if item[0] != "head":
                raise StreamGone("the upstream sent no answer head")
            headers: Raw = item[1]
            status = int(dict(headers).get(b":status", b"0"))
            regular = [(k, v) for k, v in headers if not k.startswith(b":")]
            if status >= 200:
                return _H2Reply(up, stream, status, regular)
            await informational(status, regular)

    def release(self, reply: Reply) -> None:
        """The exchange is over: its connection (or stream) is kept for the next one when
        the answer was read whole, else closed (or reset)."""
        if isinstance(reply, _H2Reply):
            reply.up.done(reply.stream, whole=reply.whole)
        elif isinstance(reply, _H1Reply):
            self.busy.discard(reply.leg)
            if reply.whole:  # whether it is kept alive is known when it is next wanted
                self.idle.append(reply.leg)
            else:
                reply.leg.close()

    def close(self) -> None:
        for leg in [*self.idle, *self.busy]:
            leg.close()
        self.idle.clear()
        self.busy.clear()
        if self.h2 is not None:
            self.h2.close()
            self.h2 = None

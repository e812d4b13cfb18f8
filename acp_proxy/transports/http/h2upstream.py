"""Our HTTP/2 connection to the upstream, on ``h2``: cleartext with prior knowledge
(``h2c``), many streams at once, with nothing of our own.

What belongs here: :class:`H2Upstream`, the asyncio protocol of that connection: a
request sent on a new stream, the answer's header blocks, body pieces and end read from
it. Relaying and recording are :mod:`acp_proxy.relay.http`; flow control and bounded
memory are :mod:`acp_proxy.transports.http.h2base`.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h2.events

from acp_proxy.transports.http.h2base import H2Protocol, H2Stream, error_name

__all__ = ["H2Upstream"]

Raw = list[tuple[bytes, bytes]]


class H2Upstream(H2Protocol):
    def __init__(self) -> None:
        super().__init__(client_side=True)
        self.goaway = False
        self._slot = asyncio.Event()  # set when a stream ends: one may be opened

    @classmethod
    async def open(cls, host: str, port: int, *, timeout: float) -> H2Upstream:
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(timeout):
            _transport, up = await loop.create_connection(cls, host, port)
        return up

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.begin()

    def event(self, event: Any) -> None:
        side = self.side
        stream = side.streams.get(getattr(event, "stream_id", 0) or 0)
        if isinstance(event, (h2.events.ResponseReceived, h2.events.InformationalResponseReceived)):
            if stream is not None:
                stream.push("head", list(event.headers))
        elif isinstance(event, h2.events.ConnectionTerminated):
            self._goaway(event)
        else:
            side.handle(event)
            if isinstance(event, (h2.events.StreamEnded, h2.events.StreamReset)):
                self._slot.set()

    def _goaway(self, event: h2.events.ConnectionTerminated) -> None:
        self.goaway = True
        reason = f"the upstream ended the connection (GOAWAY {error_name(event.error_code or 0)})"
        last = event.last_stream_id or 0
        for s in list(self.side.streams.values()):
            if s.id > last:  # not taken: it may be sent again
                s.refused = True
                s.gone(reason)
            elif event.error_code:
                s.gone(reason)

    def lose(self, reason: str) -> None:
        super().lose(reason)
        self._slot.set()

    # -- for the relay --------------------------------------------------------------------

    def usable(self) -> bool:
        return self.side.lost is None and not self.goaway

    async def request(self, headers: Raw, body: bytes) -> H2Stream:
        """Send a request (``headers`` with its pseudo-header fields) on a new stream."""
        conn, side = self.side.conn, self.side
        while conn.open_outbound_streams >= conn.remote_settings.max_concurrent_streams:
            if side.lost is not None:
                raise ConnectionError(side.lost)
            self._slot.clear()
            await self._slot.wait()
        if not self.usable():
            raise ConnectionError(side.lost or "the upstream ended the connection (GOAWAY)")
        stream = H2Stream(conn.get_next_available_stream_id())
        side.streams[stream.id] = stream
        side.send_headers(stream, headers, end=not body)
        if body:
            await side.send_data(stream, body)
            side.end_stream(stream)
        return stream

    def done(self, stream: H2Stream, *, whole: bool) -> None:
        """The exchange on ``stream`` is over: reset it unless its answer came ``whole``."""
        if whole:
            self.side.forget(stream)
        else:
            self.side.reset(stream)
        self._slot.set()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

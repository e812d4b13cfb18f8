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

import h2.config
import h2.connection
import h2.events
import h2.exceptions

from acp_proxy.transports.http.h2base import H2Side, H2Stream, error_name
from acp_proxy.transports.http.legs import MAX_HEAD

__all__ = ["H2Upstream"]

Raw = list[tuple[bytes, bytes]]


class H2Upstream(asyncio.Protocol):
    def __init__(self) -> None:
        config = h2.config.H2Configuration(client_side=True, header_encoding=None)
        self.side = H2Side(h2.connection.H2Connection(config=config), self._write)
        self.transport: asyncio.Transport | None = None
        self.goaway = False
        self._slot = asyncio.Event()  # set when a stream ends: one may be opened

    @classmethod
    async def open(cls, host: str, port: int, *, timeout: float) -> H2Upstream:
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(timeout):
            _transport, up = await loop.create_connection(cls, host, port)
        return up

    def _write(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    # -- asyncio callbacks ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        conn = self.side.conn
        conn.local_settings.max_header_list_size = MAX_HEAD
        conn.initiate_connection()
        conn.update_settings(self.side.settings())
        self.side.open_windows()
        self.side.flush()

    def data_received(self, data: bytes) -> None:
        try:
            events = self.side.conn.receive_data(data)
        except h2.exceptions.ProtocolError as e:
            self.side.flush()
            self._lose(f"HTTP/2 protocol error from the upstream: {e}")
            self.close()
            return
        for event in events:
            self._event(event)
        self.side.flush()

    def _event(self, event: Any) -> None:
        side = self.side
        stream = side.streams.get(getattr(event, "stream_id", 0) or 0)
        if isinstance(event, (h2.events.ResponseReceived, h2.events.InformationalResponseReceived)):
            if stream is not None:
                stream.push("head", list(event.headers))
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.goaway = True
            reason = (
                f"the upstream ended the connection (GOAWAY {error_name(event.error_code or 0)})"
            )
            last = event.last_stream_id or 0
            for s in list(side.streams.values()):
                if s.id > last or event.error_code:
                    s.gone(reason)
        else:
            side.handle(event)
            if isinstance(event, (h2.events.StreamEnded, h2.events.StreamReset)):
                self._slot.set()

    def connection_lost(self, exc: Exception | None) -> None:
        reason = f"{type(exc).__name__}: {exc}" if exc else "the upstream closed the connection"
        self._lose(reason)

    def _lose(self, reason: str) -> None:
        self.side.connection_gone(reason)
        self._slot.set()

    def pause_writing(self) -> None:
        self.side.writable.clear()

    def resume_writing(self) -> None:
        self.side.writable.set()

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

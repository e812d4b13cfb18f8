"""HTTP/2 on ``h2``: what the client leg and the upstream leg share (no relaying, no
recording).

What belongs here: :class:`H2Side`, one ``h2`` connection and the socket it writes to:
sending a body under HTTP/2 flow control, and taking back the receive window of what was
relayed; :class:`H2Protocol`, the asyncio protocol both legs are (bytes in, events out);
:class:`H2Stream`, what one stream received (header blocks, body pieces, its end
or reset); :data:`PREFACE`, the bytes that open an HTTP/2 connection with prior knowledge.

Bounded memory, both ways:

- sending: a piece of a body is written only as far as the peer's window for the stream
  (and the connection) allows, and only while the socket takes it (asyncio's write
  buffer limits): a slow reader stops us, and so the sender behind us (a client that
  reads nothing at all for :attr:`H2Side.stall` seconds is dropped);
- receiving: the window of a stream is given back only for bytes that were consumed
  (relayed on, :meth:`H2Side.consumed`), so a stream holds at most its window
  (:data:`STREAM_WINDOW`) of bytes not yet relayed; the connection's window is that times
  the streams allowed at once, so a stalled stream never holds up the others.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Callable
from typing import Any

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings

__all__ = [
    "MAX_HEADERS",
    "MAX_STREAMS",
    "PREFACE",
    "STREAM_WINDOW",
    "H2Protocol",
    "H2Side",
    "H2Stream",
    "StreamGone",
    "error_name",
]

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
MAX_STREAMS = 100  # streams open at once on a connection, each way
STREAM_WINDOW = 65535  # HTTP/2's initial window: bytes a stream may have unconsumed
CONNECTION_WINDOW = MAX_STREAMS * STREAM_WINDOW
MAX_HEADERS = 64 * 1024  # the largest header list taken, as HTTP/1.1's head limit

Raw = list[tuple[bytes, bytes]]


class StreamGone(Exception):
    """The stream was reset, or its connection ended."""


def error_name(code: int) -> str:
    try:
        return h2.errors.ErrorCodes(code).name
    except ValueError:
        return f"0x{code:x}"


class H2Stream:
    """What one stream received, in order: ``("head", headers)`` for each header block
    (informational ones too), ``("data", bytes, flow_controlled_length)``, then
    ``("end", trailers)``; or the reason it was cut (:attr:`cut`)."""

    def __init__(self, stream_id: int) -> None:
        self.id = stream_id
        self.items: collections.deque[tuple[Any, ...]] = collections.deque()
        self.arrived = asyncio.Event()
        self.window = asyncio.Event()  # set when our send window may have grown
        self.cut: str | None = None  # why the stream is gone (a reset, the connection lost)
        self.dead = asyncio.Event()  # set with ``cut``
        self.refused = False  # cut before the peer took it: it may be sent again
        self.ended = False  # the peer ended its side

    def push(self, *item: Any) -> None:
        self.items.append(item)
        self.arrived.set()

    def gone(self, reason: str) -> None:
        if self.cut is None:
            self.cut = reason
        self.dead.set()
        self.arrived.set()
        self.window.set()

    async def next(self) -> tuple[Any, ...]:
        """The next item; :class:`StreamGone` once it was cut and nothing is left."""
        while not self.items:
            if self.cut is not None:
                raise StreamGone(self.cut)
            self.arrived.clear()
            await self.arrived.wait()
        return self.items.popleft()


class H2Side:
    """An ``h2`` connection, its streams and the socket it writes to."""

    def __init__(self, conn: h2.connection.H2Connection, write: Callable[[bytes], None]) -> None:
        self.conn = conn
        self._write = write
        self.streams: dict[int, H2Stream] = {}
        self.writable = asyncio.Event()
        self.writable.set()
        self.lost: str | None = None  # why the connection is gone
        self.stall: float | None = None  # seconds the peer may read nothing (None: forever)
        self.drop: Callable[[], None] | None = None  # drops the connection when it does
        self.emptied: Callable[[], None] | None = None  # called when no stream is left

    def settings(self) -> dict[int, int]:
        return {
            h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: MAX_STREAMS,
            h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: STREAM_WINDOW,
            h2.settings.SettingCodes.ENABLE_PUSH: 0,
        }

    def open_windows(self) -> None:
        """Our connection window, sized for every stream to use its own at once."""
        self.conn.increment_flow_control_window(CONNECTION_WINDOW - STREAM_WINDOW)

    def flush(self) -> None:
        data = self.conn.data_to_send()
        if data and self.lost is None:
            self._write(data)

    def handle(self, event: Any) -> H2Stream | None:
        """What every connection does with an event; the stream it concerns, if any."""
        stream = self.streams.get(getattr(event, "stream_id", 0) or 0)
        if isinstance(event, h2.events.DataReceived) and stream is not None:
            stream.push("data", event.data, event.flow_controlled_length)
        elif isinstance(event, h2.events.DataReceived):  # a stream we let go: its window back
            with contextlib.suppress(h2.exceptions.ProtocolError):
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.TrailersReceived) and stream is not None:
            stream.ended = True
            stream.push("end", list(event.headers))
        elif isinstance(event, h2.events.StreamEnded) and stream is not None:
            if not stream.ended:
                stream.ended = True
                stream.push("end", [])
        elif isinstance(event, h2.events.StreamReset) and stream is not None:
            stream.refused = event.error_code == h2.errors.ErrorCodes.REFUSED_STREAM
            stream.gone(f"stream reset ({error_name(event.error_code)})")
        elif isinstance(event, (h2.events.WindowUpdated, h2.events.RemoteSettingsChanged)):
            targets = [stream] if stream is not None else list(self.streams.values())
            for s in targets:
                s.window.set()
        return stream

    def connection_gone(self, reason: str) -> None:
        if self.lost is None:
            self.lost = reason
        self.writable.set()
        for stream in list(self.streams.values()):
            stream.gone(reason)

    async def send_data(self, stream: H2Stream, data: bytes) -> None:
        """Send ``data`` on ``stream`` as the peer's windows allow; :class:`StreamGone` when
        the stream or the connection is gone meanwhile."""
        view = memoryview(data)
        while view:
            self._check(stream)
            try:
                window = self.conn.local_flow_control_window(stream.id)
            except h2.exceptions.ProtocolError as e:
                raise StreamGone("stream closed") from e
            size = min(window, self.conn.max_outbound_frame_size, len(view))
            if size <= 0:
                stream.window.clear()
                await stream.window.wait()
                continue
            try:
                self.conn.send_data(stream.id, view[:size].tobytes())
            except h2.exceptions.ProtocolError as e:
                raise StreamGone("stream closed") from e
            view = view[size:]
            self.flush()
            await self._drained()

    async def _drained(self) -> None:
        if self.writable.is_set():
            return
        if self.stall is None:
            await self.writable.wait()
            return
        try:
            async with asyncio.timeout(self.stall):
                await self.writable.wait()
        except TimeoutError:
            self.connection_gone(f"the peer read nothing for {self.stall:g} s")
            if self.drop is not None:
                self.drop()

    def _check(self, stream: H2Stream) -> None:
        if stream.cut is not None:
            raise StreamGone(stream.cut)
        if self.lost is not None:
            raise StreamGone(self.lost)

    def send_headers(self, stream: H2Stream, headers: Raw, *, end: bool = False) -> None:
        self._check(stream)
        try:
            self.conn.send_headers(stream.id, headers, end_stream=end)
        except h2.exceptions.ProtocolError as e:
            raise StreamGone("stream closed") from e
        self.flush()

    def end_stream(self, stream: H2Stream, trailers: Raw | None = None) -> None:
        self._check(stream)
        try:
            if trailers:
                self.conn.send_headers(stream.id, trailers, end_stream=True)
            else:
                self.conn.end_stream(stream.id)
        except h2.exceptions.ProtocolError as e:
            raise StreamGone("stream closed") from e
        self.flush()

    def consumed(self, stream: H2Stream, size: int) -> None:
        """``size`` flow-controlled bytes of ``stream`` were relayed: the peer may send more."""
        if self.lost is None and size:
            with contextlib.suppress(h2.exceptions.ProtocolError):
                self.conn.acknowledge_received_data(size, stream.id)
            self.flush()

    def _let_go(self, stream: H2Stream) -> None:
        if self.streams.pop(stream.id, None) is not None and not self.streams and self.emptied:
            self.emptied()

    def reset(self, stream: H2Stream, code: int = h2.errors.ErrorCodes.CANCEL) -> None:
        """Reset the stream (when it is still open) and forget it."""
        self._let_go(stream)
        stream.gone("reset by us")
        if self.lost is None:
            try:
                self.conn.reset_stream(stream.id, error_code=code)
            except h2.exceptions.ProtocolError:  # closed already (or the connection)
                return
            self.flush()

    def forget(self, stream: H2Stream) -> None:
        """The exchange on ``stream`` is over; its unread bytes' window goes back."""
        self._let_go(stream)
        unread = sum(item[2] for item in stream.items if item[0] == "data")
        stream.items.clear()
        if unread and self.lost is None:
            with contextlib.suppress(h2.exceptions.ProtocolError):
                self.conn.acknowledge_received_data(unread, stream.id)
            self.flush()


class H2Protocol(asyncio.Protocol):
    """An HTTP/2 connection as an asyncio protocol: what it reads goes through ``h2``, each
    event to :meth:`event`; writing waits while the socket does not take more."""

    def __init__(self, *, client_side: bool) -> None:
        config = h2.config.H2Configuration(client_side=client_side, header_encoding=None)
        self.side = H2Side(h2.connection.H2Connection(config=config), self._write)
        self.transport: asyncio.Transport | None = None

    def _write(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def begin(self, upgrade_settings: bytes | None = None) -> None:
        """Our preface and settings (after an ``Upgrade: h2c``: with the client's)."""
        conn = self.side.conn
        conn.local_settings.max_header_list_size = MAX_HEADERS
        if upgrade_settings is not None:
            conn.initiate_upgrade_connection(upgrade_settings)
        else:
            conn.initiate_connection()
        conn.update_settings(self.side.settings())
        self.side.open_windows()
        self.side.flush()

    def data_received(self, data: bytes) -> None:
        try:
            events = self.side.conn.receive_data(data)
        except h2.exceptions.ProtocolError as e:
            self.side.flush()  # h2 wrote a GOAWAY saying why
            self.lose(f"HTTP/2 protocol error: {e}")
            if self.transport is not None:
                self.transport.close()
            return
        for event in events:
            self.event(event)
        self.side.flush()

    def event(self, event: Any) -> None:
        self.side.handle(event)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lose(f"{type(exc).__name__}: {exc}" if exc else "the peer closed the connection")

    def lose(self, reason: str) -> None:
        self.side.connection_gone(reason)

    def pause_writing(self) -> None:
        self.side.writable.clear()

    def resume_writing(self) -> None:
        self.side.writable.set()

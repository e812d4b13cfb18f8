"""WebSocket endpoints on ``websockets`` (asyncio API) with nothing of our own.

What belongs here: the settings every WebSocket leg is opened with, the server and client
connection types, :class:`WsEndpoint` (one leg: whole messages in and out with their opcode,
the close of one leg mirrored on another), :class:`FastLane` (a leg forwarding complete
messages to another from the protocol callback) and how a leg ended (:class:`Ending`). The
header policy of the upgrade (what is relayed, what is stored) is
:mod:`acp_proxy.transports.headers`.
No recording here, and no relaying beyond the :class:`FastLane` the relay installs
(``relay/core.py``).

Every ``websockets`` default that would add, refuse or reshape traffic is set explicitly
(docs/protocol.md §2.3, §12.7; docs/design.md, "Anti-patterns the code avoids"):

- ``compression=None`` on both legs: no permessage-deflate negotiated, so frames are what
  the peers sent; ``server_header=None`` and ``user_agent_header=None``: no header of ours.
- ``ping_interval=None``: no keepalive pings unless asked for (pings a peer sends are still
  answered with pongs on that leg, as RFC 6455 requires; they are not relayed).
- ``max_size`` 64 MiB by default (the library's is 1 MiB); ``max_queue`` and ``write_limit``
  explicit: when a reader stops reading, at most ``max_queue`` frames are buffered, then the
  socket stops being read and TCP pushes back on the sender.
- no subprotocol is ever chosen by us: the server leg selects what the upstream selected.
- ``proxy=None`` (no ``$HTTPS_PROXY`` surprise) and no redirect following on the client leg:
  an upstream's 3xx reaches the client as it was sent.

Text messages are received with ``decode=False``: their payload bytes are never decoded, so
invalid UTF-8 cannot be "fixed" or rejected by us, and are sent on with ``text=True``.
Fragmented messages are reassembled (one message in, one frame out).
"""

from __future__ import annotations

import collections
import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.connection import Connection
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode, Frame
from websockets.frames import Opcode as _WsOpcode
from websockets.protocol import State
from websockets.typing import Subprotocol

from acp_proxy.protocol.frames import Opcode

__all__ = [
    "DROPPED",
    "NO_STATUS",
    "Ended",
    "Ending",
    "FastLane",
    "Message",
    "RelayClientConnection",
    "RelayServerConnection",
    "WsEndpoint",
    "WsSettings",
    "install_lane",
    "open_client",
]

NO_STATUS = int(CloseCode.NO_STATUS_RCVD)  # 1005: a close frame without a code
DROPPED = int(CloseCode.ABNORMAL_CLOSURE)  # 1006: no close frame at all (TCP dropped)


@dataclasses.dataclass(frozen=True, slots=True)
class WsSettings:
    """How every WebSocket leg is opened. Defaults add, refuse and reshape nothing."""

    max_size: int | None = 64 * 1024 * 1024
    max_queue: int = 16
    write_limit: int = 64 * 1024
    open_timeout: float = 10.0
    close_timeout: float = 5.0
    ping_interval: float | None = None
    ping_timeout: float | None = None

    def common(self) -> dict[str, Any]:
        return {
            "compression": None,
            "max_size": self.max_size,
            "max_queue": self.max_queue,
            "write_limit": self.write_limit,
            "close_timeout": self.close_timeout,
            "ping_interval": self.ping_interval,
            "ping_timeout": self.ping_timeout if self.ping_interval is not None else None,
        }


@dataclasses.dataclass(frozen=True, slots=True)
class Message:
    """One message as it crossed a leg: opcode and exact payload.

    ``terminated`` is set by line-based (stdio) sources: the line ended with ``\\n``.
    ``oversize`` marks a stdio line cut because it exceeded the size limit (not forwarded).
    """

    opcode: Opcode
    data: bytes
    t_ns: int
    terminated: bool = False
    oversize: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class Ending:
    """How one leg ended.

    ``code`` is the close code to mirror on the other leg: the peer's when it closed
    (``NO_STATUS`` for a close frame without a code), the one we or the library sent when
    the close started here (a protocol error, a message over ``max_size``), ``DROPPED``
    when the connection went away without a close frame; ``None`` for a stdio stream's EOF.
    """

    code: int | None
    reason: str = ""
    by: str = "peer"  # 'peer' (the other end closed or dropped) or 'proxy'
    kind: str = "close"  # 'close', 'drop', 'eof', 'exit', 'too_big', 'shutdown'
    detail: dict[str, Any] = dataclasses.field(default_factory=dict)

    def as_event(self) -> dict[str, Any]:
        out: dict[str, Any] = {"how": self.kind, "by": self.by}
        if self.code is not None:
            out["code"] = self.code
            out["reason"] = self.reason
        out.update(self.detail)
        return out

    @classmethod
    def from_closed(cls, exc: ConnectionClosed) -> Ending:
        rcvd, sent = exc.rcvd, exc.sent
        if rcvd is not None and (sent is None or exc.rcvd_then_sent):
            return cls(int(rcvd.code), rcvd.reason, "peer", "close")
        if sent is not None:
            detail: dict[str, Any] = {}
            cause = exc.__cause__
            if cause is not None:
                detail["error"] = f"{type(cause).__name__}: {cause}"
            return cls(int(sent.code), sent.reason, "proxy", "close", detail)
        cause = exc.__cause__
        detail = {"error": f"{type(cause).__name__}: {cause}"} if cause is not None else {}
        return cls(DROPPED, "", "peer", "drop", detail)


class Ended(Exception):
    """A leg ended; ``ending`` says how."""

    def __init__(self, ending: Ending) -> None:
        super().__init__(ending.kind)
        self.ending = ending


def _track(opcodes: collections.deque[Opcode], event: object) -> None:
    # The first frame of each message carries its opcode; messages come out of the
    # assembler in the order their first frames went in, so a FIFO pairs them.
    if isinstance(event, Frame):
        if event.opcode is _WsOpcode.TEXT:
            opcodes.append(Opcode.TEXT)
        elif event.opcode is _WsOpcode.BINARY:
            opcodes.append(Opcode.BINARY)


OnMessage = Callable[[Opcode, bytes, int], None]
OnBatch = Callable[[list[tuple[Opcode, bytes, int]]], None]


class FastLane:
    """Forwards each complete single-frame message from ``src`` to ``dst`` inside the
    protocol callback that parsed it: no task switch, no copy beyond the frame's.

    Order is kept with the slow path (``recv``: fragmented messages, and whatever was
    queued before the lane existed): a frame takes the lane only when no message of
    ``src`` is waiting in the assembler or held by the relay. ``on_message`` (the tap)
    sees each message before it is written on. Backpressure: when ``dst``'s write buffer
    is over its limit, reading from ``src`` is paused until it drains.

    The messages one network read brings are a batch (:meth:`begin`, :meth:`flush`):
    recorded together by ``on_batch`` (one journal write), then written on together (one
    socket write), so a flood of small messages costs two system calls per read, not three
    per message. Recorded before forwarded holds for the batch as for one message.
    """

    __slots__ = (
        "batch",
        "delivered",
        "dst",
        "on_batch",
        "on_message",
        "paused_src",
        "src",
        "undelivered",
    )

    def __init__(
        self, src: Any, dst: Any, on_message: OnMessage, on_batch: OnBatch | None = None
    ) -> None:
        self.src, self.dst, self.on_message, self.on_batch = src, dst, on_message, on_batch
        self.delivered = self.undelivered = 0
        self.paused_src = False
        self.batch: list[tuple[Opcode, bytes, int]] | None = None

    def begin(self) -> None:
        if self.on_batch is not None:
            self.batch = []

    def flush(self) -> None:
        batch, self.batch = self.batch, None
        if not batch:
            return
        assert self.on_batch is not None
        self.on_batch(batch)
        dst = self.dst
        protocol = dst.protocol
        if protocol.state is not State.OPEN:
            self.undelivered += len(batch)
            return
        for opcode, data, _ in batch:
            if opcode is Opcode.TEXT:
                protocol.send_text(data)
            else:
                protocol.send_binary(data)
        try:
            out = protocol.data_to_send()
            if all(out):
                dst.transport.write(b"".join(out))
            else:  # an end of stream among them: websockets' own way
                for data in out:
                    if data:
                        dst.transport.write(data)
                    elif dst.transport.can_write_eof():
                        dst.transport.write_eof()
        except Exception:  # the transport failed: the relay sees the close
            self.undelivered += len(batch)
            return
        self.delivered += len(batch)
        if dst.paused and not self.paused_src:
            self.paused_src = True
            self.src.transport.pause_reading()

    def take(self, frame: Frame) -> bool:
        src = self.src
        if not frame.fin or src.opcodes or src.holding:
            return False
        if frame.opcode is _WsOpcode.TEXT:
            opcode = Opcode.TEXT
        elif frame.opcode is _WsOpcode.BINARY:
            opcode = Opcode.BINARY
        else:
            return False
        data = frame.data if type(frame.data) is bytes else bytes(frame.data)
        if self.batch is not None:
            self.batch.append((opcode, data, time.monotonic_ns()))
            return True
        self.on_message(opcode, data, time.monotonic_ns())
        dst = self.dst
        if dst.protocol.state is not State.OPEN:
            self.undelivered += 1
            return True
        if opcode is Opcode.TEXT:
            dst.protocol.send_text(data)
        else:
            dst.protocol.send_binary(data)
        try:
            dst.send_data()
        except Exception:  # the transport failed: the relay sees the close
            self.undelivered += 1
            return True
        self.delivered += 1
        if dst.paused and not self.paused_src:
            self.paused_src = True
            src.transport.pause_reading()
        return True

    def resumed(self) -> None:
        """``dst`` drained its write buffer: read ``src`` again (unless its assembler is
        full, which resumes reading itself)."""
        if self.paused_src:
            self.paused_src = False
            if not self.src.recv_messages.paused and self.src.protocol.state is not State.CLOSED:
                self.src.transport.resume_reading()


class _Relaying(Connection):
    """What both legs' connections add: each message's opcode remembered
    (``recv(decode=False)`` gives bytes for both), forwarding on a :class:`FastLane`, and
    hooks run when writing may resume."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.opcodes: collections.deque[Opcode] = collections.deque()
        self.lane: FastLane | None = None
        self.holding = False  # the relay holds a message of ours not yet written on
        self.drain_hooks: list[Callable[[], None]] = []

    def data_received(self, data: bytes) -> None:
        lane = self.lane
        if lane is None:
            super().data_received(data)
            return
        lane.begin()
        try:
            super().data_received(data)
        finally:
            lane.flush()

    def process_event(self, event: Any) -> None:
        if self.lane is not None and isinstance(event, Frame) and self.lane.take(event):
            return
        _track(self.opcodes, event)
        super().process_event(event)

    def resume_writing(self) -> None:
        super().resume_writing()
        for hook in self.drain_hooks:
            hook()


class RelayServerConnection(_Relaying, ServerConnection):
    """The client's leg: also carries the relay's per-connection state and tells the relay
    when the connection is lost."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.attachment: object = None
        self.lost_hooks: list[Callable[[], None]] = []

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        for hook in self.lost_hooks:
            hook()


class RelayClientConnection(_Relaying, ClientConnection):
    """The upstream's leg."""


def install_lane(
    src: RelayServerConnection | RelayClientConnection,
    dst: RelayServerConnection | RelayClientConnection,
    on_message: OnMessage,
    on_batch: OnBatch | None = None,
) -> FastLane:
    lane = FastLane(src, dst, on_message, on_batch)
    dst.drain_hooks.append(lane.resumed)
    src.lane = lane
    return lane


class _connect(connect):
    """``connect`` that does not follow redirects: a 3xx is the client's business."""

    def process_redirect(self, exc: Exception) -> Exception | str:
        return exc


async def open_client(
    url: str,
    settings: WsSettings,
    *,
    headers: Sequence[tuple[str, str]] = (),
    subprotocols: Sequence[str] = (),
) -> RelayClientConnection:
    """Open the upstream leg. Raises what ``websockets`` raises (``InvalidStatus`` with the
    upstream's response, ``OSError``, ``TimeoutError``, ``InvalidURI``, ``InvalidHandshake``).
    """
    conn = await _connect(
        url,
        additional_headers=list(headers) or None,
        subprotocols=[Subprotocol(s) for s in subprotocols] or None,
        user_agent_header=None,
        origin=None,
        proxy=None,
        open_timeout=settings.open_timeout,
        create_connection=RelayClientConnection,
        **settings.common(),
    )
    assert isinstance(conn, RelayClientConnection)
    return conn


class WsEndpoint:
    """One WebSocket leg as the relay sees it: whole messages, and how it ended."""

    line_based = False

    def __init__(self, conn: RelayServerConnection | RelayClientConnection, side: str) -> None:
        self.conn = conn
        self.side = side
        self._ending: Ending | None = None

    async def recv(self) -> Message:
        conn = self.conn
        conn.holding = False  # the previous message has been written on
        try:
            data = await conn.recv(decode=False)
        except ConnectionClosed as e:
            raise Ended(Ending.from_closed(e)) from None
        conn.holding = True  # until the relay asks for the next one
        return Message(conn.opcodes.popleft(), data, _now())

    async def send(self, msg: Message) -> None:
        try:
            await self.conn.send(msg.data, text=msg.opcode is Opcode.TEXT)
        except ConnectionClosed as e:
            raise Ended(Ending.from_closed(e)) from None

    async def end(self, why: Ending) -> None:
        """Mirror the other leg's end here. Idempotent.

        - a close code → the same code and reason in our close frame;
        - ``NO_STATUS`` (1005) → a close frame without a code, as the peer sent;
        - ``DROPPED`` (1006) → this TCP connection is dropped without a close frame too,
          so this peer sees 1006 just as it would have without us in the middle;
        - a stdio stream's EOF or agent exit → 1000, or 1011 with the exit status.
        """
        if self._ending is not None:
            return
        self._ending = why
        conn = self.conn
        if conn.protocol.state is State.CLOSED:
            return
        code = why.code
        if code is None:
            code = 1000 if why.kind in ("eof", "shutdown") else int(CloseCode.INTERNAL_ERROR)
        if code == DROPPED or code == int(CloseCode.TLS_HANDSHAKE):
            conn.transport.abort()
            await conn.wait_closed()
            return
        try:
            if code == NO_STATUS:
                if conn.protocol.state is State.OPEN:
                    async with conn.send_context():
                        conn.protocol.send_close()
                await conn.wait_closed()
            else:
                await conn.close(code, why.reason)
        except ConnectionClosed:
            pass


def _now() -> int:
    return time.monotonic_ns()

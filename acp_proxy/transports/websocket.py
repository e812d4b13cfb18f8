"""WebSocket endpoints on ``websockets`` (asyncio API) with nothing of our own.

What belongs here: the settings every WebSocket leg is opened with, the server and client
connection types (a client's leg drops a client that reads nothing for the idle timeout:
:class:`StallGuard`), :class:`WsEndpoint` (one leg: whole messages in and out with their
opcode, the close of one leg mirrored on another, within the close timeout whether the
peer reads or not: :func:`close_within`), the ``lane`` hook a relay forwards complete
messages through from the protocol callback, and how a leg ended (:class:`LegEnd`). The
header policy of the upgrade (what is relayed, what is stored) is
:mod:`acp_proxy.transports.headers`.
No recording and no relaying here: a relay installs its fast lane (``relay/lane.py``)
through the ``lane`` hook of the connections.

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

import asyncio
import collections
import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

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
    "GuardedServerConnection",
    "Lane",
    "LegEnd",
    "LegMessage",
    "RelayClientConnection",
    "RelayServerConnection",
    "StallGuard",
    "WsEndpoint",
    "WsSettings",
    "close_within",
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
class LegMessage:
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
class LegEnd:
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
    def from_closed(cls, exc: ConnectionClosed) -> LegEnd:
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

    def __init__(self, ending: LegEnd) -> None:
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


class Lane(Protocol):
    """What a relay installs on a connection to see its frames first (``relay/lane.py``):
    ``take`` a frame (True: handled, not queued), and ``begin``/``flush`` around what one
    network read brought."""

    delivered: int
    undelivered: int

    def take(self, frame: Frame) -> bool: ...
    def begin(self) -> None: ...
    def flush(self) -> None: ...


class StallGuard(Connection):
    """A connection whose peer reads nothing of what it is sent for :attr:`stall` seconds
    (the socket's buffer stays full) is dropped: it would hold its slot, and whatever
    waits to write to it, for ever (the listeners' ``--idle-timeout``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stall: float | None = None
        self._stalled: asyncio.TimerHandle | None = None

    def pause_writing(self) -> None:
        super().pause_writing()
        if self.stall is not None and self._stalled is None:
            self._stalled = self.loop.call_later(self.stall, self.transport.abort)

    def resume_writing(self) -> None:
        if self._stalled is not None:
            self._stalled.cancel()
            self._stalled = None
        super().resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._stalled is not None:
            self._stalled.cancel()
            self._stalled = None
        super().connection_lost(exc)


class GuardedServerConnection(StallGuard, ServerConnection):
    """A server connection that drops a peer reading nothing (:class:`StallGuard`)."""


class _Relaying(Connection):
    """What both legs' connections add: each message's opcode remembered
    (``recv(decode=False)`` gives bytes for both), the :class:`Lane` a relay may install to
    see each frame first (the relay's is ``relay/lane.py``), and hooks run when writing may
    resume."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.opcodes: collections.deque[Opcode] = collections.deque()
        self.lane: Lane | None = None
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

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        for hook in self.drain_hooks:  # it never drains now: whoever waited on it reads on
            hook()


class RelayServerConnection(_Relaying, StallGuard, ServerConnection):
    """The client's leg: also carries the relay's per-connection state, tells the relay
    when the connection is lost, and drops a client that reads nothing (:class:`StallGuard`)."""

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


async def close_within(conn: Connection, code: int, reason: str, timeout: float) -> None:
    """Close ``conn`` with ``code`` and ``reason``, waiting at most ``timeout`` seconds in
    all; then drop its TCP connection. ``websockets`` waits for the close frame to be
    written before its own close timeout starts, which is forever when the peer reads
    nothing: a peer that stopped reading must never hold a relay, nor its shutdown."""
    try:
        async with asyncio.timeout(timeout):
            await conn.close(code, reason)
    except TimeoutError:
        conn.transport.abort()
        await conn.wait_closed()


class WsEndpoint:
    """One WebSocket leg as the relay sees it: whole messages, and how it ended."""

    line_based = False

    def __init__(self, conn: RelayServerConnection | RelayClientConnection, side: str) -> None:
        self.conn = conn
        self.side = side
        self._ending: LegEnd | None = None

    async def recv(self) -> LegMessage:
        conn = self.conn
        conn.holding = False  # the previous message has been written on
        try:
            data = await conn.recv(decode=False)
        except ConnectionClosed as e:
            raise Ended(LegEnd.from_closed(e)) from None
        conn.holding = True  # until the relay asks for the next one
        return LegMessage(conn.opcodes.popleft(), data, _now())

    async def send(self, msg: LegMessage) -> None:
        try:
            await self.conn.send(msg.data, text=msg.opcode is Opcode.TEXT)
        except ConnectionClosed as e:
            raise Ended(LegEnd.from_closed(e)) from None

    async def end(self, why: LegEnd) -> None:
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
            if code != NO_STATUS:
                await close_within(conn, code, why.reason, conn.close_timeout or 10.0)
                return
            async with asyncio.timeout(conn.close_timeout or 10.0):  # as close_within
                if conn.protocol.state is State.OPEN:
                    async with conn.send_context():
                        conn.protocol.send_close()
                await conn.wait_closed()
        except ConnectionClosed:
            pass
        except TimeoutError:
            conn.transport.abort()
            await conn.wait_closed()


def _now() -> int:
    return time.monotonic_ns()

"""The WebSocket fast lane: whole messages forwarded inside the callback that parsed them.

What belongs here: :class:`FastLane` and :func:`install_lane`, the part of the ws↔ws relay
that runs in the protocol callbacks of ``websockets`` connections (the pumps of
``relay/pump.py`` carry the rest). The connections only offer the hook
(``transports/websocket.py``: ``Lane``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from websockets.frames import Frame
from websockets.frames import Opcode as _WsOpcode
from websockets.protocol import State

from acp_proxy.protocol.frames import Opcode
from acp_proxy.transports.websocket import RelayClientConnection, RelayServerConnection

__all__ = ["FastLane", "OnBatch", "OnMessage", "install_lane"]

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
        """``dst`` drained its write buffer, or is gone: read ``src`` again (unless its
        assembler is full, which resumes reading itself); what it sends to a ``dst`` that
        is gone is counted undelivered, and its close is read in time."""
        if self.paused_src:
            self.paused_src = False
            if not self.src.recv_messages.paused and self.src.protocol.state is not State.CLOSED:
                self.src.transport.resume_reading()


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

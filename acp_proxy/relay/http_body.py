"""An upstream's answer body relayed to the client, and recorded.

What belongs here: :func:`relay_body`. Each piece of the body is recorded, then written to
the client at once, as it came (an event stream is not held back for whole events). What
is recorded:

- an event stream (``text/event-stream``): the ``data`` of each event is an ``a2c``
  message; an event that is not exactly ``data: …\\n\\n`` (a keep-alive comment, ``id:``,
  ``retry:``, several ``data`` lines, ``\\r\\n`` line ends) is kept too, as an ``sse``
  event with its exact bytes, so the stream can be rebuilt byte for byte;
- any other 2xx body with bytes in it (the answer to ``initialize``) is one ``a2c``
  message, recorded before its last byte is forwarded;
- other bodies (the upstream's errors) go in the exchange's ``http`` event.

A message over ``--max-size`` is recorded in pieces (``opcode`` NULL), forwarded whole.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import h11

from acp_proxy.protocol.frames import Direction, Opcode
from acp_proxy.record.wire import Stream
from acp_proxy.relay.http_acp import BODY_KEPT, AcpConnection, body_field, raw_field
from acp_proxy.transports.http11 import ClientGone, ClientLeg, UpstreamLeg
from acp_proxy.transports.sse import SseEvent, SseFramer, canonical

__all__ = ["BodyEnding", "relay_body"]

_A2C = Direction.AGENT_TO_CLIENT


@dataclasses.dataclass(slots=True)
class BodyEnding:
    how: str  # 'end', 'drop' (the upstream cut it short), 'client_gone'
    body: dict[str, Any] = dataclasses.field(default_factory=dict)


class _Recorder:
    def __init__(self, acp: AcpConnection, stream: dict[str, Any], max_size: int) -> None:
        self.tap = acp.tap
        self.stream = stream
        self.framer = SseFramer(max_size)
        self.events = 0
        self.messages: list[int] = []  # the index of each message among the a2c ones

    def sse(self, event: SseEvent) -> None:
        tap = self.tap
        self.events += 1
        index = tap.positions[Stream.A2C]
        if event.oversize:
            self.messages.append(index)
            tap.message(_A2C, event.raw, None)
        elif event.data:
            self.messages.append(index)
            tap.message(_A2C, event.data, Opcode.TEXT)
            if not canonical(event):
                tap.event("sse", **self.stream, message=index, **raw_field(event.raw))
        else:  # no message: it comes before the a2c message numbered ``before``
            tap.event("sse", **self.stream, before=index, **raw_field(event.raw))

    def end(self, how: str, size: int, **detail: Any) -> None:
        tail = self.framer.end()
        if tail is not None:
            detail["incomplete"] = raw_field(tail.raw)
        by = "proxy" if how in ("shutdown", "client_gone") else "peer"
        self.tap.event(
            "stream_end",
            **self.stream,
            how=how,
            by=by,
            events=self.events,
            bytes=size,
            messages=self.messages,
            **detail,
        )


async def relay_body(
    acp: AcpConnection,
    up: UpstreamLeg,
    leg: ClientLeg,
    *,
    sse: bool,
    status: int,
    expected: int | None,
    max_size: int,
    stream: dict[str, Any],
) -> BodyEnding:
    tap = acp.tap
    rec = _Recorder(acp, stream, max_size) if sse else None
    message = not sse and 200 <= status < 300  # the body is a message (initialize's answer)
    kept = bytearray()
    size = 0
    pieces = recorded = False

    def record_whole() -> None:
        nonlocal recorded
        recorded = True
        if message and kept and not pieces:
            tap.message(_A2C, bytes(kept), Opcode.TEXT)

    def info(how: str, error: str | None = None) -> BodyEnding:
        body: dict[str, Any] = {} if how == "end" else {"how": how}
        if error:
            body["error"] = error
        if not message:
            body.update(body_field(bytes(kept)))
            body["body_size"] = size
            if size > BODY_KEPT:
                body["body_truncated"] = True
        else:
            body["body_size"] = size
        return BodyEnding(how, body)

    try:
        while True:
            try:
                event = await up.next_event()
            except (OSError, h11.ProtocolError) as e:
                error = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
                if rec is not None:
                    rec.end("drop", size, error=error)
                return info("drop", error)
            if isinstance(event, h11.Data):
                data = bytes(event.data)
                size += len(data)
                if rec is not None:
                    for piece in rec.framer.feed(data):
                        rec.sse(piece)
                elif message and (pieces or len(kept) + len(data) > max_size):
                    tap.message(_A2C, bytes(kept) + data, None)
                    pieces = True
                    kept.clear()
                elif message or len(kept) < BODY_KEPT:
                    kept += data if message else data[: BODY_KEPT - len(kept)]
                if expected is not None and size == expected and not recorded:
                    record_whole()
                await leg.send(h11.Data(data=data))
            elif isinstance(event, h11.EndOfMessage):
                if not recorded:
                    record_whole()
                await leg.send(h11.EndOfMessage(headers=list(event.headers.raw_items())))
                if rec is not None:
                    rec.end("end", size)
                return info("end")
            else:
                raise h11.RemoteProtocolError(f"unexpected {type(event).__name__}")
    except (asyncio.CancelledError, ClientGone):
        how = "client_gone" if leg.gone.is_set() or leg.lost else "shutdown"
        if rec is not None:
            rec.end(how, size)
        else:
            tap.event("body_end", how=how, body_size=size)
        raise

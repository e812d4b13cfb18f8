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
from typing import TYPE_CHECKING, Any

from acp_proxy import events
from acp_proxy.events import UNSET, Unset
from acp_proxy.protocol.frames import Direction, Opcode
from acp_proxy.record.core.wire import Stream
from acp_proxy.relay.http.connections import BODY_KEPT, AcpConnection, body_field, raw_field
from acp_proxy.transports.http.common import ClientGone, ClientRequest, End, UpstreamDropped
from acp_proxy.transports.sse import SseEvent, SseFramer, canonical

if TYPE_CHECKING:
    from acp_proxy.relay.http.upstreams import Reply

__all__ = ["BodyEnding", "EventStream", "relay_body"]

_A2C = Direction.AGENT_TO_CLIENT


@dataclasses.dataclass(frozen=True, slots=True)
class EventStream:
    """Which event stream an answer is: the ACP connection's, or a session's."""

    stream: str  # 'connection' or 'session'
    session: str | Unset = UNSET


def _raw(data: bytes) -> tuple[str | Unset, str | Unset]:
    """Bytes kept in an event: as text when they are UTF-8 (``raw``), else base64."""
    kept = raw_field(data)
    return kept.get("raw", UNSET), kept.get("raw_b64", UNSET)


@dataclasses.dataclass(slots=True)
class BodyEnding:
    how: str  # 'end', 'drop' (the upstream cut it short), 'client_gone'
    body: dict[str, Any] = dataclasses.field(default_factory=dict)


class _Recorder:
    def __init__(self, acp: AcpConnection, stream: EventStream, max_size: int) -> None:
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
                raw, b64 = _raw(event.raw)
                tap.event(events.Sse(stream=self.stream.stream, session=self.stream.session,
                                     message=index, raw=raw, raw_b64=b64))  # fmt: skip
        else:  # no message: it comes before the a2c message numbered ``before``
            raw, b64 = _raw(event.raw)
            tap.event(events.Sse(stream=self.stream.stream, session=self.stream.session,
                                 before=index, raw=raw, raw_b64=b64))  # fmt: skip

    def end(self, how: str, size: int, error: str | Unset = UNSET) -> None:
        tail = self.framer.end()
        by = "proxy" if how in ("shutdown", "client_gone") else "peer"
        self.tap.event(
            events.StreamEnd(
                stream=self.stream.stream,
                session=self.stream.session,
                how=how,
                by=by,
                events=self.events,
                bytes_=size,
                messages=self.messages,
                error=error,
                incomplete=raw_field(tail.raw) if tail is not None else UNSET,
            )
        )


async def relay_body(
    acp: AcpConnection,
    reply: Reply,
    client: ClientRequest,
    *,
    sse: bool,
    expected: int | None,
    max_size: int,
    stream: EventStream | None,
) -> BodyEnding:
    """Relay ``reply``'s body to ``client`` piece by piece, recording each piece first."""
    tap = acp.tap
    rec = _Recorder(acp, stream, max_size) if stream is not None else None
    message = not sse and 200 <= reply.status < 300  # a message (initialize's answer)
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
                piece = await reply.next_piece()
            except UpstreamDropped as e:
                if rec is not None:
                    rec.end("drop", size, error=str(e))
                return info("drop", str(e))
            if isinstance(piece, bytes):
                data = piece
                size += len(data)
                if rec is not None:
                    for event in rec.framer.feed(data):
                        rec.sse(event)
                elif message and (pieces or len(kept) + len(data) > max_size):
                    tap.message(_A2C, bytes(kept) + data, None)
                    pieces = True
                    kept.clear()
                elif message or len(kept) < BODY_KEPT:
                    kept += data if message else data[: BODY_KEPT - len(kept)]
                if expected is not None and size == expected and not recorded:
                    record_whole()
                await client.send_data(data)
                reply.consumed()
            elif isinstance(piece, End):
                if not recorded:
                    record_whole()
                await client.send_end(piece.trailers)
                if rec is not None:
                    rec.end("end", size)
                return info("end")
    except (asyncio.CancelledError, ClientGone):
        how = "client_gone" if client.gone.is_set() or client.lost else "shutdown"
        if rec is not None:
            rec.end(how, size)
        else:
            tap.event(events.BodyEnd(how=how, body_size=size))
        raise

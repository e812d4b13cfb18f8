"""One relay core for WebSocket pairings.

What belongs here: pumping messages between two endpoints with a tap (:func:`relay`). The
endpoints are in ``transports/websocket.py`` (a WebSocket leg) and ``transports/lines.py``
(the stdio leg of a bridge); the sessions that set a relay up — the listener and the stdio
client bridge — are in ``relay/listener.py`` and ``relay/bridge.py``.

Order and recording: a message is handed to the tap when it has been received, before it is
sent on, so ``seq`` is the order of arrival at the proxy across both directions. Between two
WebSocket legs, single-frame messages are forwarded in the protocol callback (FastLane, in
``relay/lane.py``); the pumps carry the rest and see each side's end.

How each end is mirrored on the other leg is :meth:`WsEndpoint.end`; see docs/websocket.md.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from acp_proxy import events
from acp_proxy.events import UNSET
from acp_proxy.protocol.frames import Direction, Opcode
from acp_proxy.record.link import Tap
from acp_proxy.relay.lane import install_lane
from acp_proxy.transports.websocket import Ended, LegEnd, LegMessage, WsEndpoint

__all__ = ["Endpoint", "relay"]


class Endpoint(Protocol):
    side: str
    line_based: bool

    async def recv(self) -> LegMessage: ...
    async def send(self, msg: LegMessage) -> None: ...
    async def end(self, why: LegEnd) -> None: ...


# -- the relay core -----------------------------------------------------------------------


async def relay(client: Endpoint, agent: Endpoint, tap: Tap) -> dict[str, LegEnd]:
    """Pump both directions until both ends are done; returns how each side ended."""
    endings: dict[str, LegEnd] = {}
    if isinstance(client, WsEndpoint) and isinstance(agent, WsEndpoint):
        _fast_lanes(client, agent, tap)
    try:
        async with asyncio.TaskGroup() as tg:
            tasks = [
                tg.create_task(_pump(client, agent, Direction.CLIENT_TO_AGENT, tap, endings)),
                tg.create_task(_pump(agent, client, Direction.AGENT_TO_CLIENT, tap, endings)),
            ]
    except Exception as e:
        tap.event(events.Error(error=f"{type(e).__name__}: {e}"))
        raise
    assert all(t.done() for t in tasks)
    return endings


def _fast_lanes(client: WsEndpoint, agent: WsEndpoint, tap: Tap) -> None:
    """ws↔ws: complete messages are forwarded in the protocol callbacks (FastLane); the
    pumps below still carry fragmented messages and see each side's end."""
    c2a, a2c = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT

    def record_c2a(opcode: Opcode, data: bytes, t: int) -> None:
        tap.message(c2a, data, opcode, t)

    def record_a2c(opcode: Opcode, data: bytes, t: int) -> None:
        tap.message(a2c, data, opcode, t)

    def batch_c2a(batch: list[tuple[Opcode, bytes, int]]) -> None:
        tap.messages(c2a, batch)

    def batch_a2c(batch: list[tuple[Opcode, bytes, int]]) -> None:
        tap.messages(a2c, batch)

    install_lane(client.conn, agent.conn, record_c2a, batch_c2a)
    install_lane(agent.conn, client.conn, record_a2c, batch_a2c)


async def _pump(
    src: Endpoint, dst: Endpoint, direction: Direction, tap: Tap, endings: dict[str, LegEnd]
) -> None:
    add_newline = dst.line_based
    delivered = undelivered = newlines = 0
    deliverable = True
    while True:
        try:
            msg = await src.recv()
        except Ended as e:
            ending = e.ending
            break
        if msg.oversize:  # a stdio line over the limit: recorded, never forwarded
            tap.message(direction, msg.data, None, msg.t_ns, terminated=msg.terminated)
            if deliverable:
                deliverable = False
                tap.event(events.TooBig(direction=direction.value, side=src.side))
                await dst.end(LegEnd(1009, "message too big", "proxy", "too_big"))
            undelivered += 1
            continue
        tap.message(
            direction, msg.data, msg.opcode, msg.t_ns, terminated=msg.terminated or add_newline
        )
        if add_newline and b"\n" in msg.data:
            newlines += 1
        if deliverable:
            try:
                await dst.send(msg)
                delivered += 1
                continue
            except Ended:
                deliverable = False
        undelivered += 1
    endings[src.side] = ending
    lane = src.conn.lane if isinstance(src, WsEndpoint) else None
    if lane is not None:
        delivered += lane.delivered
        undelivered += lane.undelivered
    ended = events.Close if ending.kind in ("close", "drop") else events.StreamEnd
    tap.event(ended(side=src.side, **ending.as_event()))
    tap.event(
        events.DirectionEnd(
            direction=direction.value,
            delivered=delivered,
            # recorded, but the other side was gone
            undelivered=undelivered or UNSET,
            # the stdio peer saw them as line breaks
            embedded_newlines=newlines or UNSET,
        )
    )
    await dst.end(ending)


# -- the stdio side of a bridge -----------------------------------------------------------

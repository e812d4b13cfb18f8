"""``replay agent --listen``: a recording standing in for an agent at ``/acp``, over
WebSocket and Streamable HTTP on the same port, as the SDK's server serves both.

What belongs here: :func:`serve_listen`, the listener. A connection's first bytes say
what it speaks: a WebSocket upgrade goes to the WebSocket stand-in (one text message per
JSON-RPC message, :func:`_websocket`), any other request to the Streamable HTTP one
(:class:`acp_proxy.replay.http.HttpAgent`), over HTTP/1.1 or HTTP/2 with prior knowledge.
Each ACP connection replays the recording from its start; the listener serves one (or,
with ``keep_serving``, one after another) and says whether every replay ran clean.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import h11
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from acp_proxy.relay.core.admission import host_allowed
from acp_proxy.replay.core.agent import MatchMode
from acp_proxy.replay.http import HttpAgent
from acp_proxy.replay.serve import Recording, ReplaySession, Say, Timing, say_on_stderr
from acp_proxy.transports.accept import Acceptor, listening_sockets
from acp_proxy.transports.http.common import ClientGone
from acp_proxy.transports.http.h2client import H2ClientLeg, H2Request
from acp_proxy.transports.http.legs import ClientLeg, H1Request
from acp_proxy.transports.tasks import Tasks
from acp_proxy.transports.timeouts import Timeouts
from acp_proxy.transports.websocket import WsSettings
from acp_proxy.transports.ws_handover import HandOver

__all__ = ["Limits", "serve_listen"]


def _checks(hosts: frozenset[str]) -> Callable[[ServerConnection, Request], Response | None]:
    """The checks of an upgrade request (those of :class:`HttpAgent` for the others)."""

    def check(connection: ServerConnection, request: Request) -> Response | None:
        named = request.headers.get_all("Host")
        if len(named) != 1 or not host_allowed(named[0], "localhost", allowed=hosts):
            return connection.respond(421, "that Host is not this listener's (--allow-host)\n")
        if request.path.split("?")[0] != "/acp":
            return connection.respond(404, "replay serves ACP at /acp\n")
        if "Origin" in request.headers:
            return connection.respond(403, "browser origins are refused\n")
        return None

    return check


async def _websocket(
    ws: ServerConnection, recording: Recording, mode: MatchMode, timing: Timing, say: Say
) -> bool:
    """One WebSocket client, from the start of the recording: True when it ran clean."""
    replay = ReplaySession(recording, mode, timing, say)
    say(f"client connected from {ws.remote_address}")

    async def writer() -> None:
        async for emit in replay.paced():
            try:
                await ws.send(emit.data, text=True)  # the recorded bytes, as a text frame
            except ConnectionClosed:
                return

    async def reader() -> None:
        try:
            while True:
                replay.receive(await ws.recv(decode=False))  # payload bytes, never decoded
        except ConnectionClosed:
            pass
        replay.close()

    async with asyncio.TaskGroup() as tg:
        tg.create_task(reader())
        tg.create_task(writer())
    return replay.finish()


class _Listener:
    def __init__(
        self,
        recording: Recording,
        mode: MatchMode,
        timing: Timing,
        keep: bool,
        say: Say,
        limits: Limits,
    ) -> None:
        self.recording, self.mode, self.timing, self.say = recording, mode, timing, say
        self.keep = keep
        self.timeouts = limits.timeouts
        self.results: list[bool] = []
        self.finished = asyncio.Event()
        self.tasks = Tasks()
        self.http = HttpAgent(
            recording, mode=mode, timing=timing, say=say, ended=self.ended, hosts=limits.hosts
        )
        self.hand_over = HandOver(
            self.websocket,
            WsSettings(),
            timeouts=limits.timeouts,
            process_request=_checks(limits.hosts),
        )  # no compression, no pings, 64 MiB messages, bounded queues

    def ended(self, clean: bool) -> None:
        self.results.append(clean)
        if not self.keep:
            self.finished.set()

    async def websocket(self, ws: ServerConnection) -> None:
        self.ended(await _websocket(ws, self.recording, self.mode, self.timing, self.say))

    def first(self, leg: ClientLeg, request: h11.Request | None, raw: bytes) -> None:
        assert leg.transport is not None
        if request is None:  # HTTP/2 with prior knowledge
            h2 = H2ClientLeg(lambda r: self.tasks.run(self._stream(r)), self.timeouts)
            h2.start(leg.transport, raw)
        elif [v.lower() for k, v in request.headers if k == b"upgrade"] == [b"websocket"]:
            self.hand_over.take(leg.transport, raw)
        else:
            self.tasks.run(self._h1(leg))

    async def _stream(self, request: H2Request) -> None:
        try:
            await self.http.handle(request)
        except ClientGone:
            pass
        finally:
            request.close()

    async def _h1(self, leg: ClientLeg) -> None:
        event: Any = leg.request
        try:
            while isinstance(event, h11.Request):
                await self.http.handle(H1Request(leg, event))
                if not leg.reusable():
                    break
                event = await leg.next_request()
        except (h11.ProtocolError, ClientGone, OSError):
            pass
        finally:
            leg.close()

    async def close(self) -> None:
        await self.tasks.cancel()
        await self.hand_over.close(1001, WsSettings().close_timeout)
        await self.http.close()


@dataclass(frozen=True, slots=True)
class Limits:
    """What the listener holds its clients to: timeouts, and the ``Host`` names it answers
    besides loopback ones (``--allow-host``)."""

    timeouts: Timeouts = field(default_factory=Timeouts)
    hosts: frozenset[str] = frozenset()


async def serve_listen(
    recording: Recording,
    host: str,
    port: int,
    *,
    mode: MatchMode = MatchMode.LENIENT,
    timing: Timing | None = None,
    keep_serving: bool = False,
    say: Say = say_on_stderr,
    on_listening: Callable[[str], None] | None = None,
    limits: Limits | None = None,
) -> bool:
    """Be the agent at ``/acp`` for WebSocket and Streamable HTTP clients. Serves one ACP
    connection (or, with ``keep_serving``, each in turn, every one from the start of the
    recording); True when every replay ran clean."""
    limits = limits or Limits()
    listener = _Listener(recording, mode, timing or Timing(None), keep_serving, say, limits)
    sockets = listening_sockets(host, port)
    server = Acceptor(sockets, lambda: ClientLeg(listener.first, limits.timeouts), say)
    bound = sockets[0].getsockname()
    shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
    url = f"ws://{shown}:{bound[1]}/acp"
    say(
        f"standing in for the agent of {recording.source} at {url} "
        f"(Streamable HTTP: http://{shown}:{bound[1]}/acp)"
    )
    if on_listening is not None:
        on_listening(url)
    try:
        await listener.finished.wait()
    finally:
        server.close()
        await listener.close()
    return all(listener.results)

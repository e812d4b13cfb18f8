"""The sessions that set a WebSocket relay up.

What belongs here: the listener (:func:`serve`; each client connection is one capture and
gets either its own upstream connection — man in the middle — or its own agent process) and
the session of each connection, from the upgrade request to the end of the relay. Who may
connect is decided in :mod:`acp_proxy.relay.core.admission`; our stdin/stdout as a client of a
remote WebSocket agent is :mod:`acp_proxy.relay.bridge`.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from websockets.datastructures import Headers
from websockets.exceptions import InvalidStatus, WebSocketException
from websockets.http11 import Request, Response
from websockets.protocol import State

from acp_proxy import events
from acp_proxy.errors import AgentSpawnError
from acp_proxy.record import chain
from acp_proxy.record.link import CaptureMeta, RecorderLink
from acp_proxy.relay import RefusalLog, warn
from acp_proxy.relay.config import ServeConfig
from acp_proxy.relay.core.admission import Caller, check_listen_address, upstream_target
from acp_proxy.relay.core.capacity import Capacity
from acp_proxy.relay.pump import Endpoint, relay
from acp_proxy.transports.accept import Acceptor, listening_sockets
from acp_proxy.transports.headers import (
    redact_headers,
    redact_subprotocol,
    redact_url,
    relay_request_headers,
    relay_response_headers,
    subprotocols_of,
    without_params,
)
from acp_proxy.transports.lines import agent_endpoint
from acp_proxy.transports.process import AgentProcess
from acp_proxy.transports.tasks import Tasks
from acp_proxy.transports.websocket import RelayServerConnection, WsEndpoint, open_client
from acp_proxy.transports.ws_handover import HandOver

__all__ = ["WsFront", "serve"]


class WsFront:
    """The listener's state: config, writer, and the sessions it runs."""

    def __init__(self, config: ServeConfig, writer: RecorderLink) -> None:
        self.config = config
        self.writer = writer
        self.listen_url = ""
        self.tasks = Tasks()
        self.refusals = RefusalLog()  # the clients it answered itself, on stderr
        self.capacity = Capacity.for_messages(
            config.max_connections, config.max_in_flight, config.settings.max_size or 0
        )

    async def process_request(self, conn: Any, request: Request) -> Response | None:
        assert isinstance(conn, RelayServerConnection)
        if [u.lower() for u in request.headers.get_all("Upgrade")] != ["websocket"]:
            return None  # not an upgrade: let websockets answer it (426)
        session = _Session(self, conn, request)
        conn.attachment = session
        conn.lost_hooks.append(session.lost)
        return await session.open()

    def select_subprotocol(self, conn: Any, offered: Sequence[str]) -> Any:
        session = getattr(conn, "attachment", None)
        if isinstance(session, _Session) and session.subprotocol in offered:
            return session.subprotocol
        return None  # never invent one (docs/protocol.md §2.3)

    def process_response(self, conn: Any, request: Request, response: Response) -> None:
        session = getattr(conn, "attachment", None)
        if not isinstance(session, _Session):
            return
        if response.status_code != 101 or conn.protocol.state is not State.CONNECTING:
            session.refused_late(response.status_code)
            return
        session.decorate(response)

    async def handler(self, conn: Any) -> None:
        session = getattr(conn, "attachment", None)
        if isinstance(session, _Session):
            await session.run()


class _Session:
    """One client connection: one capture, one upstream connection or agent process."""

    def __init__(self, front: WsFront, conn: RelayServerConnection, request: Request) -> None:
        self.front = front
        self.conn = conn
        self.request = request
        cfg = front.config
        self.keep = cfg.keep_secrets
        self.target = without_params(request.path, cfg.admission.consumes_param)
        self.upstream_url = upstream_target(cfg.upstream, self.target) if cfg.upstream else None
        peer = conn.remote_address
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.subprotocol: str | None = None
        self.upstream: Any = None
        self.agent: AgentProcess | None = None
        self.started = False
        self.done = False  # the capture is closed (refused, failed, abandoned or relayed)
        self.admitted = False  # holds a slot of the listener's capacity
        self.abandoning = False
        self.open_done = asyncio.Event()  # open() has returned, whatever it opened
        self.opened_ns = time.monotonic_ns()
        meta = CaptureMeta(
            transport="ws" if cfg.upstream else "ws-stdio",
            agent_command=list(cfg.command) if cfg.command else None,
            cwd=os.getcwd() if cfg.command else None,
            upstream_url=redact_url(self.upstream_url, keep_secrets=self.keep)
            if self.upstream_url
            else None,
            listen_url=front.listen_url + redact_url(request.path, keep_secrets=self.keep),
            label=cfg.label,
        )
        self.uid = meta.uid
        self.logged = False
        self.tap = front.writer.open_capture(meta)

    def _log(self, outcome: str) -> None:
        """The one line each connection gets on stderr: peer, path, capture, outcome."""
        if self.logged:
            return
        self.logged = True
        warn(self._line(outcome))

    def _line(self, outcome: str) -> str:
        path = redact_url(self.request.path, keep_secrets=False)
        took = (time.monotonic_ns() - self.opened_ns) / 1e9
        what = "not recorded" if self.front.writer.refused else f"capture {self.uid[:8]}"
        return f"ws {self.peer} {path} {what}: {outcome} ({took:.1f} s)"

    def _end(self) -> None:
        self.done = True
        if self.admitted:
            self.admitted = False
            self.front.capacity.release()

    def _request_event(self) -> dict[str, Any]:
        return {
            "client": self.peer,
            "path": redact_url(self.request.path, keep_secrets=self.keep),
            "headers": redact_headers(self.request.headers.raw_items(), keep_secrets=self.keep),
        }

    def _fail(
        self, status: int, make: Callable[..., events.Event], message: str, **detail: Any
    ) -> Response:
        """Answer the client ourselves, recording the event ``make`` makes of it."""
        event = make(status=status, error=message, request=self._request_event(), **detail)
        self.tap.event(event)
        self.tap.close(end_reason=f"{event.kind.replace('_', ' ')} {status}")  # refused 401, ...
        self._end()
        what = {"upstream_failed": "upstream failed"}.get(event.kind, event.kind)
        self.logged = True  # the connection's one line, if the rule lets it be written
        self.front.refusals.refused(status, self._line(f"{what}, HTTP {status}: {message}"))
        return self.conn.respond(status, f"acp-proxy: {message}\n")

    async def open(self) -> Response | None:
        """Admission, then the upstream connection or the agent process (docs/protocol.md
        §12.7: headers relayed, subprotocol and cookies relayed back)."""
        try:
            return await self._open()
        finally:
            self.open_done.set()

    async def _open(self) -> Response | None:
        cfg = self.front.config
        refusal = cfg.admission.refusal(
            Caller.of(self.request.path, self.request.headers.raw_items())
        )
        if refusal is not None:
            return self._fail(refusal[0], events.Refused, refusal[1])
        full = self.front.capacity.admit()
        if full is not None:
            return self._fail(503, events.Refused, full)
        self.admitted = True
        if cfg.upstream is None:
            return await self._spawn_agent()
        headers = relay_request_headers(self.request.headers, consumed=cfg.admission.consumes)
        assert self.upstream_url is not None
        shown = redact_url(self.upstream_url, keep_secrets=False)
        try:
            self.upstream = await open_client(
                self.upstream_url,
                cfg.settings,
                headers=headers,
                subprotocols=subprotocols_of(self.request.headers),
            )
        except InvalidStatus as e:  # the upstream answered, but not 101: relay its answer
            r = e.response
            self.tap.event(
                events.UpstreamRefused(
                    status=r.status_code,
                    headers=redact_headers(r.headers.raw_items(), keep_secrets=self.keep),
                    request=self._request_event(),
                )
            )
            self.tap.close(end_reason=f"upstream refused {r.status_code}")
            self._end()
            self._log(f"upstream {shown} refused, HTTP {r.status_code}; relayed to the client")
            out = Headers(relay_response_headers(r.headers))
            out["Content-Length"] = str(len(r.body))
            return Response(r.status_code, r.reason_phrase, out, bytes(r.body))
        except (OSError, TimeoutError, WebSocketException) as e:
            reason = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            return self._fail(
                502,
                events.UpstreamFailed,
                f"upstream {shown} unreachable ({reason})",
                upstream_url=redact_url(self.upstream_url, keep_secrets=self.keep),
            )
        self.subprotocol = self.upstream.subprotocol
        return None

    async def _spawn_agent(self) -> Response | None:
        cfg = self.front.config
        assert cfg.command is not None
        try:
            env = chain.join(self.tap, os.environ)  # as `record` does: a hop says so
            self.agent = AgentProcess.spawn(cfg.command, self.tap, grace=cfg.grace, env=env)
        except AgentSpawnError as e:
            return self._fail(502, events.SpawnFailed, str(e))
        return None

    def decorate(self, response: Response) -> None:
        """Our 101 carries the upstream's end-to-end headers (Acp-Connection-Id,
        Set-Cookie, Server, Date, …) and nothing of ours."""
        if self.upstream is None or self.upstream.response is None:
            return
        relayed = relay_response_headers(self.upstream.response.headers)
        if any(n.lower() == "date" for n, _ in relayed):
            del response.headers["Date"]
        for name, value in relayed:
            response.headers[name] = value

    def refused_late(self, status: int) -> None:
        if not self.done:
            self.tap.event(events.HandshakeFailed(status=status, request=self._request_event()))
            self._log(f"handshake failed, HTTP {status}")
            self._abandon_soon()

    def lost(self) -> None:
        if not self.started:
            self._abandon_soon()

    def _abandon_soon(self) -> None:
        if not self.abandoning and not self.started:
            self.abandoning = True
            self.front.tasks.run(self.abandon())

    async def abandon(self) -> None:
        """The client went away before the relay started: undo what was opened, once the
        upstream connection or agent being opened for it is there."""
        await self.open_done.wait()
        if self.started:
            return
        if self.upstream is not None:
            await self.upstream.close(1001)
        if self.agent is not None:
            if self.agent.proc.stdin is not None:
                self.agent.proc.stdin.close()
            self.agent.kill_now()
            await self.agent.wait()
        if not self.done:
            self._end()
            self.tap.event(events.Abandoned(reason="client left during the handshake"))
            self.tap.close()
            self._log("abandoned: the client left during the handshake")

    async def run(self) -> None:
        self.started = True
        if self.done:
            return
        conn = self.conn
        detail: dict[str, Any] = {"request": self._request_event()}
        if self.upstream is not None:
            up = self.upstream
            detail["upstream"] = {
                "url": redact_url(self.upstream_url or "", keep_secrets=self.keep),
                "headers": redact_headers(up.request.headers.raw_items(), keep_secrets=self.keep),
                "status": up.response.status_code,
                "response_headers": redact_headers(
                    up.response.headers.raw_items(), keep_secrets=self.keep
                ),
            }
        assert conn.response is not None
        detail["response"] = {
            "status": conn.response.status_code,
            "headers": redact_headers(conn.response.headers.raw_items(), keep_secrets=self.keep),
        }
        detail["subprotocol"] = redact_subprotocol(conn.subprotocol, keep_secrets=self.keep)
        detail["handshake_ms"] = round((time.monotonic_ns() - self.opened_ns) / 1e6, 3)
        self.tap.event(events.Handshake(**detail))
        client = WsEndpoint(conn, "client")
        exit_fields: dict[str, Any] = {}
        outcome = "closed"
        try:
            if self.agent is not None:
                agent_side: Endpoint = await agent_endpoint(
                    self.agent, self.front.config.settings.max_size or (1 << 62)
                )
            else:
                agent_side = WsEndpoint(self.upstream, "upstream")
            await relay(client, agent_side, self.tap)
        except BaseException as e:
            outcome = f"ended by {type(e).__name__}"
            raise
        finally:
            if self.agent is not None:
                code, sig = await self.agent.finish("client disconnected")
                exit_fields = {"exit_code": code, "exit_signal": sig}
                outcome += f", agent {'killed by signal ' + str(sig) if sig else f'exit {code}'}"
            self._end()
            self.tap.close(**exit_fields)
            close = getattr(conn, "close_code", None)
            self._log(outcome + (f", client close code {close}" if close is not None else ""))


async def serve(
    config: ServeConfig,
    writer: RecorderLink,
    stop: asyncio.Event,
    *,
    ready: Callable[[str], None] | None = None,
) -> None:
    """Listen until ``stop`` is set; then close client connections with 1001 (going away),
    which each session mirrors on its upstream or agent, and wait for them: a client that
    does not take the close within the close timeout is dropped, and every session is
    over within :attr:`ServeConfig.settle` seconds.

    Connections are accepted by :class:`acp_proxy.transports.accept.Acceptor` (which
    survives running out of descriptors) and served as ``websockets.serve`` would
    (:class:`acp_proxy.transports.ws_handover.HandOver`): no origin check of the library's
    (:class:`acp_proxy.relay.core.admission.Admission` checks, so refusals are recorded), no
    ``Server`` header, no subprotocol of our own, the upstream's handshake inside ours."""
    check_listen_address(config.host, config.admission.token)
    front = WsFront(config, writer)
    hand_over = HandOver(
        front.handler,
        config.settings,
        timeouts=config.timeouts,
        process_request=front.process_request,
        process_response=front.process_response,
        select_subprotocol=front.select_subprotocol,
        connection=RelayServerConnection,
    )
    acceptor = Acceptor(listening_sockets(config.host, config.port), hand_over.protocol, warn)
    host, port = acceptor.sockets[0].getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    front.listen_url = f"ws://{shown}:{port}"
    if ready is not None:
        ready(front.listen_url)
    try:
        await stop.wait()
    finally:
        acceptor.close()
        await hand_over.close(1001, config.settle)
        await front.tasks.settle(config.settle)
        front.refusals.close()

"""The sessions that set a WebSocket relay up.

What belongs here: the listener (:func:`serve`; each client connection is one capture and
gets either its own upstream connection — man in the middle — or its own agent process), its
admission rules (loopback unless a token is given, browser origins refused, and the
limits of :mod:`acp_proxy.relay.capacity`), and
:func:`bridge_stdio_client` (our stdin/stdout as a stdio client of a remote WebSocket agent).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import ipaddress
import os
import signal
import threading
import time
import urllib.parse
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from websockets.asyncio.server import serve as ws_serve
from websockets.datastructures import Headers
from websockets.exceptions import InvalidStatus, WebSocketException
from websockets.http11 import Request, Response
from websockets.protocol import State

from acp_proxy.errors import AgentSpawnError, UsageError
from acp_proxy.record.link import CaptureMeta, RecorderLink, stderr_warn
from acp_proxy.relay.capacity import DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_IN_FLIGHT, Capacity
from acp_proxy.relay.core import Endpoint, relay
from acp_proxy.text.safe import visible
from acp_proxy.transports.headers import (
    redact_headers,
    redact_subprotocol,
    redact_url,
    relay_request_headers,
    relay_response_headers,
    subprotocols_of,
    without_params,
)
from acp_proxy.transports.lines import AgentProcess, FdChannel, LineEndpoint
from acp_proxy.transports.stdio import spawn_agent
from acp_proxy.transports.websocket import (
    DROPPED,
    Ending,
    RelayServerConnection,
    WsEndpoint,
    WsSettings,
    open_client,
)

__all__ = [
    "Admission",
    "ServeConfig",
    "bridge_stdio_client",
    "check_listen_address",
    "check_token",
    "serve",
]

_OK_CLOSE = (1000, 1001, 1005)


def _warn(message: str) -> None:
    """A warning on stderr; what peers sent in it (paths, close reasons) is shown escaped."""
    stderr_warn(visible(message))


def check_token(token: str | None) -> None:
    """A token is one word: blank, spaced or with control characters it would admit
    nobody, or every client that sends an empty credential (HTTP strips the spaces)."""
    if token is None:
        return
    if not token.strip():
        raise UsageError("--token is empty or blank; give a secret (e.g. openssl rand -hex 16)")
    if any(c.isspace() or not c.isprintable() for c in token):
        raise UsageError("--token must be one word, without spaces or control characters")


@dataclasses.dataclass(frozen=True, slots=True)
class Admission:
    """Who may connect: a bearer token (header or ``?token=``) and allowed browser origins.

    A request with an ``Origin`` header not in ``allow_origins`` is refused (a page in the
    user's browser must not reach a local agent through us; docs/design.md principle 6), and so
    is one with several.

    The token is ours: :meth:`consumes` and :meth:`consumes_param` say which headers and
    query parameters carry it, however they are spelled, so it never goes further.
    """

    token: str | None = None
    allow_origins: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        check_token(self.token)

    def refusal(self, request: Request) -> tuple[int, str] | None:
        origins = request.headers.get_all("Origin")
        if len(origins) > 1:
            return 403, f"{len(origins)} Origin headers (a request has at most one)"
        if origins and origins[0] not in self.allow_origins:
            return 403, f"origin {origins[0]!r} is not allowed (--allow-origin)"
        if self.token is not None and not self._token_ok(request):
            return 401, "missing or wrong token (Authorization: Bearer TOKEN or ?token=TOKEN)"
        return None

    def _is_token(self, word: str) -> bool:
        assert self.token is not None
        return hmac.compare_digest(word.encode(), self.token.encode())

    def _token_ok(self, request: Request) -> bool:
        for value in request.headers.get_all("Authorization"):
            words = value.split()
            if len(words) == 2 and words[0].lower() == "bearer" and self._is_token(words[1]):
                return True
        query = urllib.parse.urlsplit(request.path).query
        return any(
            k == "token" and self._is_token(v)
            for k, v in urllib.parse.parse_qsl(query, keep_blank_values=True)
        )

    def consumes(self, name: str, value: str) -> bool:
        """An ``Authorization`` header with our token in it, whatever the scheme, case or
        spacing (more than is accepted: nothing that carries the token is relayed)."""
        if self.token is None or name.lower() != "authorization":
            return False
        return any(self._is_token(word) for word in value.split())

    def consumes_param(self, name: str, value: str) -> bool:
        """A query parameter (decoded) whose value is our token, whatever its name."""
        return self.token is not None and self._is_token(value)


def check_listen_address(host: str, token: str | None) -> None:
    """Refuse a non-loopback listener without a token (docs/design.md principle 6)."""
    if token:
        return
    if host == "localhost":
        return
    try:
        loopback = ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise UsageError(
            f"refusing to listen on {host}, which is not loopback, without --token "
            "(clients then send Authorization: Bearer TOKEN or ?token=TOKEN)"
        )


@dataclasses.dataclass(frozen=True, slots=True)
class ServeConfig:
    host: str = "127.0.0.1"
    port: int = 8765
    upstream: str | None = None
    command: Sequence[str] | None = None
    settings: WsSettings = dataclasses.field(default_factory=WsSettings)
    admission: Admission = dataclasses.field(default_factory=Admission)
    keep_secrets: bool = False
    grace: float = 3.0
    label: str | None = None
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT


def _upstream_target(upstream: str, client_target: str) -> str:
    """The URL to dial: the upstream's scheme and host, the client's path and query (the
    upstream URL's own path and query are used when the client asked for ``/``)."""
    base = urllib.parse.urlsplit(upstream)
    path, _, query = client_target.partition("?")
    if path in ("", "/") and not query:
        return upstream
    if path in ("", "/"):
        path = base.path or "/"
    return urllib.parse.urlunsplit((base.scheme, base.netloc, path, query, ""))


class _Front:
    """The listener's state: config, writer, and the sessions it runs."""

    def __init__(self, config: ServeConfig, writer: RecorderLink) -> None:
        self.config = config
        self.writer = writer
        self.listen_url = ""
        self.tasks: set[asyncio.Task[None]] = set()
        self.capacity = Capacity.for_messages(
            config.max_connections, config.max_in_flight, config.settings.max_size or 0
        )

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

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

    def __init__(self, front: _Front, conn: RelayServerConnection, request: Request) -> None:
        self.front = front
        self.conn = conn
        self.request = request
        cfg = front.config
        self.keep = cfg.keep_secrets
        self.target = without_params(request.path, cfg.admission.consumes_param)
        self.upstream_url = _upstream_target(cfg.upstream, self.target) if cfg.upstream else None
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
        self.tap = front.writer.open_capture(meta)

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

    def _fail(self, status: int, kind: str, message: str, **detail: Any) -> Response:
        self.tap.event(kind, status=status, error=message, request=self._request_event(), **detail)
        self.tap.close()
        self._end()
        _warn(
            f"{self.peer} {redact_url(self.request.path, keep_secrets=False)}: {message}; "
            f"answered HTTP {status}"
        )
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
        refusal = cfg.admission.refusal(self.request)
        if refusal is not None:
            return self._fail(refusal[0], "refused", refusal[1])
        full = self.front.capacity.admit()
        if full is not None:
            return self._fail(503, "refused", full)
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
                "upstream_refused",
                status=r.status_code,
                headers=redact_headers(r.headers.raw_items(), keep_secrets=self.keep),
                request=self._request_event(),
            )
            self.tap.close()
            self._end()
            _warn(f"upstream {shown} answered HTTP {r.status_code}; relayed to {self.peer}")
            out = Headers(relay_response_headers(r.headers))
            out["Content-Length"] = str(len(r.body))
            return Response(r.status_code, r.reason_phrase, out, bytes(r.body))
        except (OSError, TimeoutError, WebSocketException) as e:
            reason = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            return self._fail(
                502,
                "upstream_failed",
                f"upstream {shown} unreachable ({reason})",
                upstream_url=redact_url(self.upstream_url, keep_secrets=self.keep),
            )
        self.subprotocol = self.upstream.subprotocol
        return None

    async def _spawn_agent(self) -> Response | None:
        cfg = self.front.config
        assert cfg.command is not None
        try:
            proc = spawn_agent(cfg.command)
        except AgentSpawnError as e:
            return self._fail(502, "spawn_failed", str(e))
        self.tap.update(pid=proc.pid)
        self.tap.event("spawn", pid=proc.pid, argv=list(cfg.command))
        self.agent = AgentProcess(proc, self.tap, cfg.grace)
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
            self.tap.event("handshake_failed", status=status, request=self._request_event())
            self._abandon_soon()

    def lost(self) -> None:
        if not self.started:
            self._abandon_soon()

    def _abandon_soon(self) -> None:
        if not self.abandoning and not self.started:
            self.abandoning = True
            self.front.spawn(self.abandon())

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
            await asyncio.to_thread(self.agent.proc.wait)
        if not self.done:
            self._end()
            self.tap.event("abandoned", reason="client left during the handshake")
            self.tap.close()

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
        self.tap.event("handshake", **detail)
        client = WsEndpoint(conn, "client")
        exit_fields: dict[str, Any] = {}
        try:
            if self.agent is not None:
                agent_side: Endpoint = await self.agent.endpoint(
                    self.front.config.settings.max_size or (1 << 62)
                )
            else:
                agent_side = WsEndpoint(self.upstream, "upstream")
            await relay(client, agent_side, self.tap)
        finally:
            if self.agent is not None:
                code, sig = await self.agent.finish()
                exit_fields = {"exit_code": code, "exit_signal": sig}
            self._end()
            self.tap.close(**exit_fields)


async def serve(
    config: ServeConfig,
    writer: RecorderLink,
    stop: asyncio.Event,
    *,
    ready: Callable[[str], None] | None = None,
) -> None:
    """Listen until ``stop`` is set; then close client connections with 1001 (going away),
    which each session mirrors on its upstream or agent, and wait for them."""
    check_listen_address(config.host, config.admission.token)
    front = _Front(config, writer)
    s = config.settings
    async with ws_serve(
        front.handler,
        config.host,
        config.port,
        process_request=front.process_request,
        process_response=front.process_response,
        select_subprotocol=front.select_subprotocol,
        server_header=None,
        origins=None,  # checked by Admission, so refusals are recorded
        subprotocols=None,
        open_timeout=s.open_timeout * 1.5,  # the upstream's own handshake fits inside
        create_connection=RelayServerConnection,
        **s.common(),
    ) as server:
        sock = next(iter(server.sockets))
        host, port = sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        front.listen_url = f"ws://{shown}:{port}"
        if ready is not None:
            ready(front.listen_url)
        await stop.wait()
    for task in list(front.tasks):
        await task


# -- our stdio as a client of a remote WebSocket agent ------------------------------------


async def bridge_stdio_client(
    url: str,
    writer: RecorderLink,
    settings: WsSettings | None = None,
    *,
    label: str | None = None,
    keep_secrets: bool = False,
    headers: Sequence[tuple[str, str]] = (),
    stdin_fd: int = 0,
    stdout_fd: int = 1,
) -> int:
    """Relay our stdin/stdout (a stdio ACP client, e.g. an editor) to the agent at ``url``,
    sending ``headers`` with the upgrade request (``Authorization``, say).

    Returns the exit code: 0 when the connection ended normally (our stdin closed, or the
    upstream closed with 1000/1001/no code), 4 when the upstream could not be reached or
    closed abnormally, 128+N when we were stopped by signal N.
    """
    settings = settings or WsSettings()
    meta = CaptureMeta(
        transport="stdio-ws", upstream_url=redact_url(url, keep_secrets=keep_secrets), label=label
    )
    tap = writer.open_capture(meta)
    shown = redact_url(url, keep_secrets=False)
    started = time.monotonic_ns()
    try:
        conn = await open_client(url, settings, headers=headers)
    except InvalidStatus as e:
        r = e.response
        tap.event(
            "upstream_refused",
            status=r.status_code,
            headers=redact_headers(r.headers.raw_items(), keep_secrets=keep_secrets),
        )
        tap.close(exit_code=4)
        _warn(f"upstream {shown} refused the connection: HTTP {r.status_code}")
        return 4
    except (OSError, TimeoutError, WebSocketException) as e:
        reason = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
        tap.event("upstream_failed", error=reason)
        tap.close(exit_code=4)
        _warn(f"upstream {shown} unreachable ({reason})")
        return 4
    assert conn.response is not None
    tap.event(
        "handshake",
        upstream={
            "url": redact_url(url, keep_secrets=keep_secrets),
            "headers": redact_headers(conn.request.headers.raw_items(), keep_secrets=keep_secrets)
            if conn.request
            else [],
            "status": conn.response.status_code,
            "response_headers": redact_headers(
                conn.response.headers.raw_items(), keep_secrets=keep_secrets
            ),
        },
        subprotocol=redact_subprotocol(conn.subprotocol, keep_secrets=keep_secrets),
        handshake_ms=round((time.monotonic_ns() - started) / 1e6, 3),
    )
    client = LineEndpoint(FdChannel(stdin_fd, stdout_fd), "client", settings.max_size or 1 << 62)
    stopped_by: list[int] = []
    loop = asyncio.get_running_loop()

    def on_signal(signum: int) -> None:
        stopped_by.append(signum)
        tap.event("signal", signal=signal.Signals(signum).name)
        client.interrupt(Ending(1001, "", "proxy", "shutdown", {"signal": signum}))

    installed = []
    if threading.current_thread() is threading.main_thread():
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(s, on_signal, int(s))
            installed.append(s)
    code = 4
    try:
        endings = await relay(client, WsEndpoint(conn, "upstream"), tap)
        up = endings.get("upstream")
        if stopped_by:
            code = 128 + stopped_by[0]
        elif up is None or up.by == "proxy" or up.code in _OK_CLOSE:
            code = 0
        elif up.code == DROPPED:
            _warn(f"upstream {shown} dropped the connection")
        else:
            _warn(f"upstream {shown} closed the connection: {up.code} {up.reason}".rstrip())
    finally:
        for s in installed:
            loop.remove_signal_handler(s)
        tap.close(exit_code=code)
    return code

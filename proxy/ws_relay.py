"""One relay core for WebSocket pairings, and the three ways it is used (layer 3).

What belongs here: pumping messages between two endpoints with a tap (:func:`relay`), the
stdio side of a bridge (:class:`LineEndpoint`: lines in and out of pipes), and the sessions
that set a relay up: the listener (:func:`serve`; each client connection is one capture and
gets either its own upstream connection — man in the middle — or its own agent process), and
:func:`bridge_stdio_client` (our stdin/stdout as a stdio client of a remote WebSocket agent).

Order and recording: a message is handed to the tap when it has been received, before it is
sent on, so ``seq`` is the order of arrival at the proxy across both directions. Between two
WebSocket legs, single-frame messages are forwarded in the protocol callback (FastLane, in
``transports/websocket.py``); the pumps carry the rest and see each side's end.

Bridging reshapes by design (PROTOCOL.md §2.1 vs §2.3): a line becomes a message and a
message becomes a line; the payload bytes are unchanged. A line that is valid UTF-8 becomes a
text message; one that is not becomes a **binary** message with the same bytes (a text
message must be UTF-8; ACP peers ignore binary messages, so such a line reaches the peer's
wire and the recording, never silently dropped). A message (text or binary) becomes its
payload followed by ``\\n``. The stored row carries both legs: ``raw`` (the payload),
``opcode`` (the WebSocket leg) and ``terminated`` (whether the stdio leg had ``\\n``).

How each end is mirrored on the other leg is :meth:`WsEndpoint.end`; see docs/websocket.md.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import dataclasses
import hmac
import ipaddress
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Protocol

from websockets.asyncio.server import serve as ws_serve
from websockets.datastructures import Headers
from websockets.exceptions import InvalidStatus, WebSocketException
from websockets.http11 import Request, Response
from websockets.protocol import State

from .errors import AgentSpawnError, UsageError
from .events import Direction, Opcode
from .framing import LineFramer
from .recorder import CaptureMeta, Tap, Writer
from .transports.stdio import exit_status, spawn_agent, write_all
from .transports.websocket import (
    DROPPED,
    Ended,
    Ending,
    Message,
    RelayServerConnection,
    WsEndpoint,
    WsSettings,
    install_lane,
    open_client,
    redact_headers,
    redact_url,
    relay_request_headers,
    relay_response_headers,
    subprotocols_of,
    without_query_param,
)

__all__ = [
    "Admission",
    "Endpoint",
    "LineEndpoint",
    "ServeConfig",
    "bridge_stdio_client",
    "check_listen_address",
    "relay",
    "serve",
]

_CHUNK = 1 << 20
_OK_CLOSE = (1000, 1001, 1005)


def _warn(message: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"acp-proxy: {message}\n")
        sys.stderr.flush()


class Endpoint(Protocol):
    side: str
    line_based: bool

    async def recv(self) -> Message: ...
    async def send(self, msg: Message) -> None: ...
    async def end(self, why: Ending) -> None: ...


# -- the relay core -----------------------------------------------------------------------


async def relay(client: Endpoint, agent: Endpoint, tap: Tap) -> dict[str, Ending]:
    """Pump both directions until both ends are done; returns how each side ended."""
    endings: dict[str, Ending] = {}
    if isinstance(client, WsEndpoint) and isinstance(agent, WsEndpoint):
        _fast_lanes(client, agent, tap)
    try:
        async with asyncio.TaskGroup() as tg:
            tasks = [
                tg.create_task(_pump(client, agent, Direction.CLIENT_TO_AGENT, tap, endings)),
                tg.create_task(_pump(agent, client, Direction.AGENT_TO_CLIENT, tap, endings)),
            ]
    except Exception as e:
        tap.event("error", error=f"{type(e).__name__}: {e}")
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

    install_lane(client.conn, agent.conn, record_c2a)
    install_lane(agent.conn, client.conn, record_a2c)


async def _pump(
    src: Endpoint, dst: Endpoint, direction: Direction, tap: Tap, endings: dict[str, Ending]
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
                tap.event("too_big", direction=direction.value, side=src.side)
                await dst.end(Ending(1009, "message too big", "proxy", "too_big"))
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
    tap.event(
        "close" if ending.kind in ("close", "drop") else "stream_end",
        side=src.side,
        **ending.as_event(),
    )
    summary: dict[str, Any] = {"direction": direction.value, "delivered": delivered}
    if undelivered:
        summary["undelivered"] = undelivered  # recorded, but the other side was gone
    if newlines:
        summary["embedded_newlines"] = newlines  # the stdio peer saw them as line breaks
    tap.event("direction_end", **summary)
    await dst.end(ending)


# -- the stdio side of a bridge -----------------------------------------------------------


class _Channel(Protocol):
    async def read(self) -> bytes: ...
    async def write_line(self, data: bytes) -> None: ...
    async def close_write(self) -> None: ...


class _PipeChannel:
    """An agent's stdout (read) and stdin (write) as asyncio pipes."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def read(self) -> bytes:
        return await self.reader.read(_CHUNK)

    async def write_line(self, data: bytes) -> None:
        self.writer.write(data)
        self.writer.write(b"\n")
        await self.writer.drain()

    async def close_write(self) -> None:
        if not self.writer.is_closing():
            self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()


class _FdChannel:
    """Our own stdin/stdout, read and written by threads (blocking fds, as a shell left
    them: never switched to non-blocking, which would leak into a shared terminal)."""

    def __init__(self, in_fd: int, out_fd: int) -> None:
        self.in_fd, self.out_fd = in_fd, out_fd
        self._q: asyncio.Queue[bytes] = asyncio.Queue(maxsize=4)
        self._stopped = False
        self._loop = asyncio.get_running_loop()
        self._out = concurrent.futures.ThreadPoolExecutor(1, "acp-proxy-stdout")
        self._reader = threading.Thread(target=self._read_loop, name="acp-proxy-stdin", daemon=True)
        self._reader.start()

    def _read_loop(self) -> None:
        while True:
            try:
                data = os.read(self.in_fd, _CHUNK)
            except OSError:
                data = b""
            try:
                asyncio.run_coroutine_threadsafe(self._q.put(data), self._loop).result()
            except (RuntimeError, concurrent.futures.CancelledError):
                return  # the loop is gone
            if not data:
                return

    def stop(self) -> None:
        """Stop reading: ``read`` returns EOF once what was already read is consumed."""
        self._stopped = True
        if self._q.empty():
            self._q.put_nowait(b"")

    async def read(self) -> bytes:
        if self._stopped and self._q.empty():
            return b""
        return await self._q.get()

    async def write_line(self, data: bytes) -> None:
        try:
            await self._loop.run_in_executor(self._out, _write_line, self.out_fd, data)
        except OSError:
            self.stop()  # nobody reads our stdout any more: the client is gone
            raise

    async def close_write(self) -> None:
        self.stop()
        await self._loop.run_in_executor(self._out, _close_fd, self.out_fd)
        self._out.shutdown(wait=False)


def _write_line(fd: int, data: bytes) -> None:
    if len(data) < 65536:
        write_all(fd, data + b"\n")
    else:  # no copy of a large payload just to append one byte
        write_all(fd, data)
        write_all(fd, b"\n")


def _close_fd(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def _is_utf8(data: bytes) -> bool:
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


EofEnding = Callable[[], Coroutine[Any, Any, Ending]]


class LineEndpoint:
    """A stdio stream as messages: each ``\\n``-terminated line is one message.

    A line longer than ``max_line`` is returned in ``oversize`` pieces (recorded, not
    forwarded). ``eof_ending`` says how the stream's end is mirrored (an agent's exit).
    """

    line_based = True

    def __init__(
        self,
        channel: _Channel,
        side: str,
        max_line: int,
        *,
        eof_ending: EofEnding | None = None,
        on_end: Callable[[Ending], None] | None = None,
    ) -> None:
        self.channel = channel
        self.side = side
        self._framer = LineFramer(max_line)
        self._pending: collections.deque[Message] = collections.deque()
        self._eof = False
        self._oversize = False
        self._eof_ending = eof_ending
        self._on_end = on_end
        self._override: Ending | None = None
        self._ended = False

    def interrupt(self, why: Ending) -> None:
        """End reading early (a signal): ``recv`` raises with ``why`` after what was read."""
        self._override = why
        if isinstance(self.channel, _FdChannel):
            self.channel.stop()

    async def recv(self) -> Message:
        while not self._pending:
            if self._eof:
                if self._override is not None:
                    raise Ended(self._override)
                if self._eof_ending is not None:
                    raise Ended(await self._eof_ending())
                raise Ended(Ending(None, kind="eof"))
            data = await self.channel.read()
            t = time.monotonic_ns()
            if not data:
                self._eof = True
                for piece in self._framer.end():
                    self._add(piece.raw, False, False, t)
                continue
            for piece in self._framer.feed(data):
                self._add(piece.raw, piece.terminated, piece.split, t)
        return self._pending.popleft()

    def _add(self, raw: bytes, terminated: bool, split: bool, t: int) -> None:
        oversize = split or self._oversize
        self._oversize = split
        opcode = Opcode.TEXT if _is_utf8(raw) else Opcode.BINARY
        self._pending.append(Message(opcode, raw, t, terminated, oversize))

    async def send(self, msg: Message) -> None:
        try:
            await self.channel.write_line(msg.data)
        except (OSError, ConnectionError):
            raise Ended(Ending(None, kind="eof", detail={"error": "write failed"})) from None

    async def end(self, why: Ending) -> None:
        if self._ended:
            return
        self._ended = True
        await self.channel.close_write()
        if self._on_end is not None:
            self._on_end(why)


# -- an agent process per connection ------------------------------------------------------


class _Agent:
    """One agent process: its pipes, its stderr relayed and recorded, its exit."""

    def __init__(self, proc: subprocess.Popen[bytes], tap: Tap, grace: float) -> None:
        self.proc, self.tap, self.grace = proc, tap, grace
        self.exited: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._tasks: set[asyncio.Task[None]] = set()
        self._spawned = time.monotonic_ns()
        self._terminating = False

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def endpoint(self, max_line: int) -> LineEndpoint:
        loop = asyncio.get_running_loop()
        p = self.proc
        assert p.stdin is not None and p.stdout is not None and p.stderr is not None
        out = asyncio.StreamReader(limit=_CHUNK)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(out), p.stdout)
        err = asyncio.StreamReader(limit=_CHUNK)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(err), p.stderr)
        wt, wp = await loop.connect_write_pipe(
            lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), p.stdin
        )
        writer = asyncio.StreamWriter(wt, wp, None, loop)
        self._spawn(self._watch())
        self._spawn(self._stderr(err))
        return LineEndpoint(
            _PipeChannel(out, writer),
            "agent",
            max_line,
            eof_ending=self._eof_ending,
            on_end=lambda _why: self._spawn(self._terminate_later()),
        )

    async def _watch(self) -> None:
        self.exited.set_result(await _wait_process(self.proc))

    async def _stderr(self, err: asyncio.StreamReader) -> None:
        while data := await err.read(_CHUNK):
            self.tap.stderr(data)
            with contextlib.suppress(OSError):
                write_all(2, data)

    async def _eof_ending(self) -> Ending:
        """The agent closed its stdout: close the client with 1000 when it exited 0 (or is
        still running after ``grace``), else 1011 with the exit status as the reason."""
        try:
            rc = await asyncio.wait_for(asyncio.shield(self.exited), self.grace)
        except TimeoutError:
            return Ending(1000, "", "peer", "eof")
        code, sig = exit_status(rc)
        if code == 0:
            return Ending(1000, "", "peer", "exit", {"exit_code": 0})
        reason = f"agent killed by signal {sig}" if sig else f"agent exited with status {code}"
        return Ending(1011, reason, "peer", "exit", {"exit_code": code})

    async def _terminate_later(self) -> None:
        """After the client went away and stdin was closed: SIGTERM after ``grace``,
        SIGKILL after as long again (the stdio relay's lifecycle)."""
        if self._terminating:
            return
        self._terminating = True
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                await asyncio.wait_for(asyncio.shield(self.exited), self.grace)
                return
            except TimeoutError:
                self.tap.event("terminate", signal=sig.name, reason="client disconnected")
                with contextlib.suppress(ProcessLookupError):
                    self.proc.send_signal(sig)

    async def finish(self) -> tuple[int, int | None]:
        """Wait for the exit (terminating if need be); record it."""
        if not self.exited.done():
            self._spawn(self._terminate_later())
        rc = await asyncio.shield(self.exited)
        for task in list(self._tasks):
            if task is not asyncio.current_task():
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(asyncio.shield(task), 2.0)
        code, sig = exit_status(rc)
        self.tap.event(
            "exit",
            returncode=rc,
            exit_code=code,
            signal=sig,
            runtime_ms=(time.monotonic_ns() - self._spawned) / 1e6,
        )
        return code, sig

    def kill_now(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()


def _set_once(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


async def _wait_process(proc: subprocess.Popen[bytes]) -> int:
    """Wait for a child without a thread: a pidfd (Linux) tells the loop when it exits."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        while proc.poll() is None:
            await asyncio.sleep(0.05)
        return proc.returncode
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    try:
        loop.add_reader(fd, _set_once, done)
        try:
            await done
        finally:
            loop.remove_reader(fd)
    finally:
        os.close(fd)
    return proc.wait()


# -- the listener: one capture per client connection --------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Admission:
    """Who may connect: a bearer token (header or ``?token=``) and allowed browser origins.

    A request with an ``Origin`` header not in ``allow_origins`` is refused (a page in the
    user's browser must not reach a local agent through us; DESIGN.md principle 6).
    """

    token: str | None = None
    allow_origins: frozenset[str] = frozenset()

    def refusal(self, request: Request) -> tuple[int, str] | None:
        origin = request.headers.get("Origin")
        if origin is not None and origin not in self.allow_origins:
            return 403, f"origin {origin!r} is not allowed (--allow-origin)"
        if self.token is not None and not self._token_ok(request):
            return 401, "missing or wrong token (Authorization: Bearer TOKEN or ?token=TOKEN)"
        return None

    def _token_ok(self, request: Request) -> bool:
        assert self.token is not None
        want = self.token.encode()
        for value in request.headers.get_all("Authorization"):
            scheme, _, cred = value.partition(" ")
            if scheme.lower() == "bearer" and hmac.compare_digest(cred.strip().encode(), want):
                return True
        query = urllib.parse.urlsplit(request.path).query
        return any(
            k == "token" and hmac.compare_digest(v.encode(), want)
            for k, v in urllib.parse.parse_qsl(query, keep_blank_values=True)
        )


def check_listen_address(host: str, token: str | None) -> None:
    """Refuse a non-loopback listener without a token (DESIGN.md principle 6)."""
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

    def __init__(self, config: ServeConfig, writer: Writer) -> None:
        self.config = config
        self.writer = writer
        self.listen_url = ""
        self.tasks: set[asyncio.Task[None]] = set()

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def process_request(self, conn: Any, request: Request) -> Response | None:
        assert isinstance(conn, RelayServerConnection)
        if request.headers.get("Upgrade", "").lower() != "websocket":
            return None  # not an upgrade: let websockets answer it (426)
        session = _Session(self, conn, request)
        conn.attachment = session
        conn.lost_hooks.append(session.lost)
        return await session.open()

    def select_subprotocol(self, conn: Any, offered: Sequence[str]) -> Any:
        session = getattr(conn, "attachment", None)
        if isinstance(session, _Session) and session.subprotocol in offered:
            return session.subprotocol
        return None  # never invent one (PROTOCOL.md §2.3)

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
        target = request.path
        if cfg.admission.token is not None:
            target = without_query_param(target, "token", cfg.admission.token)
        self.target = target
        self.upstream_url = _upstream_target(cfg.upstream, target) if cfg.upstream else None
        peer = conn.remote_address
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.subprotocol: str | None = None
        self.upstream: Any = None
        self.agent: _Agent | None = None
        self.started = False
        self.done = False  # the capture is closed (refused, failed, abandoned or relayed)
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

    def _request_event(self) -> dict[str, Any]:
        return {
            "client": self.peer,
            "path": redact_url(self.request.path, keep_secrets=self.keep),
            "headers": redact_headers(self.request.headers.raw_items(), keep_secrets=self.keep),
        }

    def _fail(self, status: int, kind: str, message: str, **detail: Any) -> Response:
        self.tap.event(kind, status=status, error=message, request=self._request_event(), **detail)
        self.tap.close()
        self.done = True
        _warn(
            f"{self.peer} {redact_url(self.request.path, keep_secrets=False)}: {message}; "
            f"answered HTTP {status}"
        )
        return self.conn.respond(status, f"acp-proxy: {message}\n")

    async def open(self) -> Response | None:
        """Admission, then the upstream connection or the agent process (PROTOCOL.md
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
        if cfg.upstream is None:
            return await self._spawn_agent()
        drop_auth = f"Bearer {cfg.admission.token}" if cfg.admission.token else None
        headers = relay_request_headers(self.request.headers, drop_authorization=drop_auth)
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
            self.done = True
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
        self.agent = _Agent(proc, self.tap, cfg.grace)
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
            self.done = True
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
        detail["subprotocol"] = conn.subprotocol
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
            self.done = True
            self.tap.close(**exit_fields)


async def serve(
    config: ServeConfig,
    writer: Writer,
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
    writer: Writer,
    settings: WsSettings | None = None,
    *,
    label: str | None = None,
    keep_secrets: bool = False,
    stdin_fd: int = 0,
    stdout_fd: int = 1,
) -> int:
    """Relay our stdin/stdout (a stdio ACP client, e.g. an editor) to the agent at ``url``.

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
        conn = await open_client(url, settings)
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
        subprotocol=conn.subprotocol,
        handshake_ms=round((time.monotonic_ns() - started) / 1e6, 3),
    )
    client = LineEndpoint(_FdChannel(stdin_fd, stdout_fd), "client", settings.max_size or 1 << 62)
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

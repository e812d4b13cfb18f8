"""A recording standing in for an agent over Streamable HTTP.

What belongs here: :class:`HttpAgent`, which answers the requests of Streamable HTTP
clients as the official SDK's server does, from a recording:

- ``POST`` of ``initialize`` starts an ACP connection (its own
  :class:`~acp_proxy.replay.core.agent.AgentStandIn`, from the start of the recording) and is
  answered ``200`` with the recorded answer as the body and a new ``Acp-Connection-Id``;
- every other ``POST`` (with that id) is a client message handed to the stand-in,
  answered ``202``;
- the stand-in's messages go on event streams (``GET``, ``text/event-stream``): an answer
  that starts a session (its ``result`` has a ``sessionId``) on the connection's stream;
  the answer to a request that named a session, and a request or notification of a
  session, on that session's stream once it is known; the rest on the connection's.
  Messages are kept until their stream is read; each is ``data: <the recorded bytes>``;
- ``DELETE`` ends the connection: the replay of it is reported.

Which requests a client sends over which HTTP is :mod:`acp_proxy.replay.listen`.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable
from typing import Any

import orjson

from acp_proxy.relay.core.admission import host_allowed
from acp_proxy.replay.core.agent import MatchMode
from acp_proxy.replay.serve import Recording, ReplaySession, Say, Timing
from acp_proxy.transports.http.common import ClientGone, ClientRequest, ClientTimeout
from acp_proxy.transports.http.h2client import reason_of
from acp_proxy.transports.http.headers import get_all

__all__ = ["HttpAgent"]

KEEPALIVE = 15.0  # seconds: an idle stream gets a comment, as the SDK's server sends
MAX_BODY = 64 * 1024 * 1024
_JSON = (b"content-type", b"application/json")


def _parsed(data: bytes) -> dict[str, Any]:
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _session_in(value: Any) -> str | None:
    sid = value.get("sessionId") if isinstance(value, dict) else None
    return sid if isinstance(sid, str) else None


def _key(message: dict[str, Any]) -> str | None:
    return None if message.get("id") is None else str(message["id"])


def sse_event(data: bytes) -> bytes:
    """One event carrying ``data`` (a line break in it starts another ``data`` line)."""
    lines = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    return b"".join(b"data: " + line + b"\n" for line in lines) + b"\n"


class _Connection:
    """One ACP connection: its stand-in, its streams, the routes of its answers."""

    def __init__(self, recording: Recording, mode: MatchMode, timing: Timing, say: Say) -> None:
        self.id = uuid.uuid4().hex
        self.replay = ReplaySession(recording, mode, timing, say)
        self.streams: dict[str | None, asyncio.Queue[bytes | None]] = {None: asyncio.Queue()}
        self.routes: dict[str, str] = {}  # a client request's id → the session it named
        self.init_key: str | None = None
        self.init_answer: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self.writer = asyncio.ensure_future(self._write())

    async def _write(self) -> None:
        async for emit in self.replay.paced():
            self._route(emit.data)

    def _route(self, data: bytes) -> None:
        message = _parsed(data)
        key = _key(message)
        if "method" not in message and key is not None:  # an answer
            if key == self.init_key and not self.init_answer.done():
                self.init_answer.set_result(data)
                return
            started = _session_in(message.get("result"))
            if started is not None:
                self.streams.setdefault(started, asyncio.Queue())
            routed = self.routes.pop(key, None)
            target = routed if started is None else None
        else:
            target = _session_in(message.get("params"))
        queue = self.streams.get(target) or self.streams[None]
        queue.put_nowait(data)

    def deliver(self, raw: bytes) -> None:
        """A message from the client."""
        message = _parsed(raw)
        session, key = _session_in(message.get("params")), _key(message)
        if "method" in message and key is not None:
            if message["method"] == "initialize" and self.init_key is None:
                self.init_key = key
            elif session is not None:
                self.routes[key] = session
        self.replay.receive(raw)

    async def end(self) -> bool:
        """The replay of this connection is over: True when it ran clean."""
        self.replay.close()
        await self.writer
        for queue in self.streams.values():
            queue.put_nowait(None)
        return self.replay.finish()


class HttpAgent:
    """The Streamable HTTP side of ``replay agent --listen``. ``ended(clean)`` is called
    as each ACP connection ends (its ``DELETE``)."""

    def __init__(
        self,
        recording: Recording,
        *,
        mode: MatchMode,
        timing: Timing,
        say: Say,
        ended: Callable[[bool], None],
        hosts: frozenset[str] = frozenset(),
    ) -> None:
        self.recording, self.mode, self.timing, self.say = recording, mode, timing, say
        self.ended = ended
        self.hosts = hosts  # Host names answered besides loopback ones
        self.connections: dict[str, _Connection] = {}

    async def handle(self, request: ClientRequest) -> None:
        """Answer one request."""
        named = get_all(request.headers, b"host") or [request.authority]
        host = named[0].decode("latin-1") if len(named) == 1 else None
        if not host_allowed(host, "localhost", allowed=self.hosts):
            await _error(request, 421, "That Host is not this listener's (--allow-host)")
            return
        try:
            body = await request.read_body(MAX_BODY)
        except ClientTimeout as e:
            await _error(request, 408, str(e))
            return
        if isinstance(body, int):
            await _error(request, 413, "Request body too large")
        elif request.target.split(b"?")[0] != b"/acp":
            await _answer(request, 404, b"replay serves ACP at /acp\n", [])
        elif get_all(request.headers, b"origin"):
            await _answer(request, 403, b"browser origins are refused\n", [])
        elif request.method == b"POST":
            await self._post(request, body)
        elif request.method == b"GET":
            await self._get(request)
        elif request.method == b"DELETE":
            await self._delete(request)
        else:
            await _error(request, 405, "Method not allowed")

    async def _known(self, request: ClientRequest) -> _Connection | None:
        """The connection ``Acp-Connection-Id`` names; or None, the request answered."""
        ids = get_all(request.headers, b"acp-connection-id")
        conn = self.connections.get(ids[0].decode("latin-1")) if ids else None
        if conn is None:
            known = bool(ids)
            await _error(
                request, 404 if known else 400, f"{'Unknown' if known else 'Missing'} connection id"
            )
        return conn

    async def _post(self, request: ClientRequest, body: bytes) -> None:
        message = _parsed(body)
        if not message:
            await _error(request, 400, "Invalid JSON-RPC message")
        elif message.get("method") == "initialize" and "id" in message:
            conn = _Connection(self.recording, self.mode, self.timing, self.say)
            self.connections[conn.id] = conn
            self.say(f"client connected from {request.peer} (Acp-Connection-Id {conn.id})")
            conn.deliver(body)
            try:
                answer = await asyncio.wait_for(asyncio.shield(conn.init_answer), 30)
            except TimeoutError:
                await _error(request, 504, "initialize timed out")
                return
            await _answer(request, 200, answer, [_JSON, (b"acp-connection-id", conn.id.encode())])
        elif (known := await self._known(request)) is not None:
            known.deliver(body)
            await _answer(request, 202, b"", [])

    async def _get(self, request: ClientRequest) -> None:
        accept = b",".join(get_all(request.headers, b"accept"))
        if b"text/event-stream" not in accept and b"*/*" not in accept:
            await _error(request, 406, "Accept must include text/event-stream")
            return
        conn = await self._known(request)
        if conn is None:
            return
        sessions = get_all(request.headers, b"acp-session-id")
        session = sessions[0].decode("latin-1") if sessions else None
        queue = conn.streams.get(session)
        if queue is None:
            await _error(request, 404, "Unknown session id")
            return
        head = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
        await request.send_head(200, b"OK", head, None)
        with contextlib.suppress(ClientGone):
            await _stream(request, queue)

    async def _delete(self, request: ClientRequest) -> None:
        conn = await self._known(request)
        if conn is None:
            return
        del self.connections[conn.id]
        clean = await conn.end()
        await _answer(request, 202, b"", [])
        self.ended(clean)

    async def close(self) -> None:
        """The listener stops: every connection still open ends as it is."""
        for conn in list(self.connections.values()):
            self.ended(await conn.end())
        self.connections.clear()


async def _stream(request: ClientRequest, queue: asyncio.Queue[bytes | None]) -> None:
    """Send what comes on ``queue`` until it ends or the client goes away."""
    gone = asyncio.ensure_future(request.gone.wait())
    try:
        while True:
            item = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait(
                {item, gone}, timeout=KEEPALIVE, return_when=asyncio.FIRST_COMPLETED
            )
            if gone in done:
                item.cancel()
                return
            if not done:
                item.cancel()
                await request.send_data(b": keepalive\n\n")
                continue
            data = item.result()
            if data is None:
                await request.send_end([])
                return
            await request.send_data(sse_event(data))
    finally:
        gone.cancel()


async def _answer(request: ClientRequest, status: int, body: bytes, headers: list[Any]) -> None:
    await request.send_head(status, reason_of(status), headers, len(body))
    if body:
        await request.send_data(body)
    await request.send_end([])


async def _error(request: ClientRequest, status: int, error: str) -> None:
    await _answer(request, status, orjson.dumps({"error": error}), [_JSON])

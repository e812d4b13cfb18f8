"""The Streamable HTTP man in the middle.

What belongs here: :func:`serve`, a listener for ACP's HTTP endpoint that relays every
request to the upstream's (POSTs of JSON-RPC messages, event-stream GETs, DELETE) and
hands WebSocket upgrades on the same port to the WebSocket relay
(:mod:`acp_proxy.relay.http.upgrade`), so one listener serves both transports as the agent
does; and :class:`_Exchange`, one request relayed and recorded.

Each client TCP connection gets its own upstream TCP connection, used one request at a
time as the client uses its own (HTTP/1.1). Admission is ``ws``'s: the token and origin
rules of :class:`acp_proxy.relay.admission.Admission` apply to every request, and the
listener's :class:`acp_proxy.relay.capacity.Capacity` counts TCP connections of both
transports. Which capture a request belongs to is
:mod:`acp_proxy.relay.http.connections`; what crosses and what is recorded is docs/http.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

import h11
from websockets.datastructures import Headers
from websockets.http11 import Request as WsRequest

from acp_proxy.protocol.frames import Direction, Opcode
from acp_proxy.record.link import RecorderLink, stderr_warn
from acp_proxy.relay.admission import ServeConfig, check_listen_address, upstream_target
from acp_proxy.relay.capacity import Capacity
from acp_proxy.relay.http.body import relay_body
from acp_proxy.relay.http.connections import AcpConnection, AcpConnections, stored_headers
from acp_proxy.relay.http.upgrade import Upgrades
from acp_proxy.text.safe import visible
from acp_proxy.transports.headers import redact_url, without_params
from acp_proxy.transports.http.headers import decoded, framing, get_all, relay_headers
from acp_proxy.transports.http.legs import ClientGone, ClientLeg, UpstreamLeg

__all__ = ["serve", "ws_url_of"]

_NO_BODY = (204, 304)


def ws_url_of(url: str) -> str:
    """The WebSocket URL of the same endpoint (``http`` → ``ws``, ``https`` → ``wss``)."""
    scheme, rest = url.split(":", 1)
    return ("wss" if scheme.lower() == "https" else "ws") + ":" + rest


def _warn(message: str) -> None:
    stderr_warn(visible(message))


def _is_upgrade(request: h11.Request) -> bool:
    ups = [v.lower() for k, v in request.headers if k == b"upgrade"]
    return request.method == b"GET" and ups == [b"websocket"]


class Front:
    def __init__(self, config: ServeConfig, writer: RecorderLink) -> None:
        assert config.upstream is not None
        self.config = config
        self.keep = config.keep_secrets
        self.max_size = config.settings.max_size or (1 << 62)
        self.capacity = Capacity.for_messages(
            config.max_connections, config.max_in_flight, self.max_size
        )
        self.acp = AcpConnections(
            writer, upstream_url=config.upstream, keep_secrets=self.keep, label=config.label
        )
        up = urllib.parse.urlsplit(config.upstream)
        self.tls = up.scheme.lower() == "https"
        self.up_host = up.hostname or "localhost"
        self.up_port = up.port or (443 if self.tls else 80)
        self.up_netloc = up.netloc.rpartition("@")[2].encode("latin-1")
        self.upgrades: Upgrades | None = None
        self.sessions: set[asyncio.Task[None]] = set()

    def first_request(self, leg: ClientLeg, request: h11.Request, raw: bytes) -> None:
        if _is_upgrade(request) and self.upgrades is not None:
            assert leg.transport is not None
            self.upgrades.take(leg.transport, raw)
            return
        task = asyncio.get_running_loop().create_task(_Connection(self, leg).run())
        self.sessions.add(task)
        task.add_done_callback(self.sessions.discard)

    async def shutdown(self) -> None:
        for task in list(self.sessions):
            task.cancel()
        for task in list(self.sessions):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.upgrades is not None:
            await self.upgrades.close()
        self.acp.close_all()


class _Connection:
    """One client TCP connection: its requests, one after another, and its upstream leg."""

    def __init__(self, front: Front, leg: ClientLeg) -> None:
        self.front = front
        self.leg = leg
        self.up: UpstreamLeg | None = None
        self.admitted = False

    async def run(self) -> None:
        leg = self.leg
        event: Any = leg.request
        try:
            while isinstance(event, h11.Request):
                if not await _Exchange(self, event).run() or not leg.reusable():
                    break
                event = await leg.next_event()
        except (h11.ProtocolError, ClientGone, OSError):
            pass
        finally:
            if self.admitted:
                self.front.capacity.release()
            if self.up is not None:
                self.up.close()
            leg.close()

    async def upstream(self) -> tuple[UpstreamLeg, bool]:
        """The upstream leg, opened if need be; and whether it was reused."""
        if self.up is not None and self.up.reusable():
            return self.up, True
        if self.up is not None:
            self.up.close()
        f = self.front
        self.up = None
        self.up = await UpstreamLeg.open(
            f.up_host, f.up_port, tls=f.tls, timeout=f.config.settings.open_timeout
        )
        return self.up, False

    def drop_upstream(self) -> None:
        if self.up is not None:
            self.up.close()
            self.up = None


class _Exchange:
    """One request: admitted, read whole, recorded, relayed; the answer relayed as it
    comes and recorded."""

    def __init__(self, conn: _Connection, request: h11.Request) -> None:
        self.conn = conn
        self.front = conn.front
        self.leg = conn.leg
        self.request = request
        self.started = time.monotonic_ns()
        self.headers = list(request.headers.raw_items())
        self.target = request.target.decode("latin-1")
        cfg = self.front.config
        self.relayed_target = without_params(self.target, cfg.admission.consumes_param)
        ids = get_all(self.headers, b"acp-connection-id")
        self.conn_id = ids[0].decode("latin-1") if ids else None
        sessions = get_all(self.headers, b"acp-session-id")
        self.session = sessions[0].decode("latin-1") if sessions else None

    def request_event(self) -> dict[str, Any]:
        keep = self.front.keep
        return {
            "client": self.leg.peer,
            "method": self.request.method.decode("latin-1"),
            "path": redact_url(self.target, keep_secrets=keep),
            "headers": stored_headers(self.headers, keep),
        }

    async def run(self) -> bool:
        acp = self.front.acp.for_request(self.conn_id, self.relayed_target)
        try:
            return await self._run(acp)
        finally:
            acp.done()

    async def answer(
        self, acp: AcpConnection, status: int, kind: str, message: str, **detail: Any
    ) -> bool:
        """Answer the client ourselves (a refusal, an upstream that cannot be reached)."""
        acp.tap.event(kind, status=status, error=message, request=self.request_event(), **detail)
        _warn(
            f"{self.leg.peer} {self.request.method.decode('latin-1')} "
            f"{redact_url(self.target, keep_secrets=False)}: {message}; answered HTTP {status}"
        )
        body = f"acp-proxy: {message}\n".encode()
        headers = [
            (b"Content-Type", b"text/plain; charset=utf-8"),
            (b"Content-Length", b"%d" % len(body)),
        ]
        await self.leg.send(h11.Response(status_code=status, headers=headers))
        await self.leg.send(h11.Data(data=body))
        await self.leg.send(h11.EndOfMessage())
        return self.leg.h11.their_state is h11.DONE

    async def _run(self, acp: AcpConnection) -> bool:
        front, conn = self.front, self.conn
        cfg = front.config
        refusal = cfg.admission.refusal(WsRequest(self.target, Headers(decoded(self.headers))))
        if refusal is not None:
            return await self.answer(acp, refusal[0], "refused", refusal[1]) and False
        if not conn.admitted:
            full = front.capacity.admit()
            if full is not None:
                return await self.answer(acp, 503, "refused", full) and False
            conn.admitted = True
        body = await self._read_body(acp)
        if body is None:
            return False
        t_body = time.monotonic_ns()
        if body:
            acp.tap.message(Direction.CLIENT_TO_AGENT, body, Opcode.TEXT, t_body)
        target = urllib.parse.urlsplit(upstream_target(cfg.upstream or "", self.relayed_target))
        path = (target.path or "/") + (f"?{target.query}" if target.query else "")
        headers = [(b"Host", front.up_netloc)]
        headers += relay_headers(self.headers, request=True, consumed=cfg.admission.consumes)
        headers += framing(self.headers, request=True)
        request = h11.Request(
            method=self.request.method, target=path.encode("latin-1"), headers=headers
        )
        shown = redact_url(cfg.upstream or "", keep_secrets=False)
        try:
            up, response = await self._round_trip(request, body)
        except (OSError, TimeoutError, h11.ProtocolError) as e:
            conn.drop_upstream()
            reason = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            url = redact_url(cfg.upstream or "", keep_secrets=front.keep)
            return await self.answer(
                acp,
                502,
                "upstream_failed",
                f"upstream {shown} unreachable ({reason})",
                upstream_url=url,
            )
        return await self._respond(acp, up, response)

    async def _read_body(self, acp: AcpConnection) -> bytes | None:
        """The whole body, or None when it is over ``--max-size`` (then answered 413)."""
        leg, limit = self.leg, self.front.max_size
        declared = get_all(self.headers, b"content-length")
        if declared and declared[0].strip().isdigit() and int(declared[0]) > limit:
            await self._too_big(acp, int(declared[0]))
            return None
        if leg.h11.they_are_waiting_for_100_continue:
            await leg.send(h11.InformationalResponse(status_code=100, headers=[]))
        body = bytearray()
        while True:
            event = await leg.next_event()
            if isinstance(event, h11.Data):
                body += event.data
                if len(body) > limit:
                    await self._too_big(acp, len(body))
                    return None
            elif isinstance(event, h11.EndOfMessage):
                return bytes(body)
            else:
                raise ClientGone

    async def _too_big(self, acp: AcpConnection, size: int) -> None:
        limit = self.front.max_size
        await self.answer(
            acp,
            413,
            "too_big",
            f"request body of {size}+ bytes is over --max-size ({limit})",
            direction="c2a",
            size=size,
            limit=limit,
        )

    async def _round_trip(self, request: h11.Request, body: bytes) -> tuple[UpstreamLeg, Any]:
        """Send the request; the upstream's answer head (1xx relayed on). A reused
        connection the upstream closed meanwhile is replaced once."""
        for _attempt in (0, 1):
            up, reused = await self.conn.upstream()
            try:
                await up.send(request)
                if body:
                    await up.send(h11.Data(data=body))
                await up.send(h11.EndOfMessage())
                event = await up.next_event()
                break
            except (OSError, h11.RemoteProtocolError):
                self.conn.drop_upstream()
                if not reused:
                    raise
        while isinstance(event, h11.InformationalResponse):
            await self.leg.send(
                h11.InformationalResponse(
                    status_code=event.status_code,
                    headers=list(event.headers.raw_items()),
                    reason=event.reason,
                )
            )
            event = await up.next_event()
        if not isinstance(event, h11.Response):
            raise h11.RemoteProtocolError(f"unexpected {type(event).__name__}")
        return up, event

    async def _respond(self, acp: AcpConnection, up: UpstreamLeg, response: h11.Response) -> bool:
        front, leg = self.front, self.leg
        status = response.status_code
        raw = list(response.headers.raw_items())
        ids = get_all(raw, b"acp-connection-id")
        if ids and acp.conn_id is None:
            acp.name(ids[0].decode("latin-1"))
        out = relay_headers(raw, request=False)
        if self.request.method == b"HEAD" or status == 304:
            out += [(b"Content-Length", v) for v in get_all(raw, b"content-length")[:1]]
        elif status not in _NO_BODY:
            out += framing(raw, request=False)
        sse = any(
            v.split(b";")[0].strip().lower() == b"text/event-stream"
            for v in get_all(raw, b"content-type")
        )
        detail: dict[str, Any] = {
            "request": self.request_event(),
            "response": {
                "status": status,
                "reason": response.reason.decode("latin-1"),
                "headers": stored_headers(raw, front.keep),
            },
            "ms": round((time.monotonic_ns() - self.started) / 1e6, 3),
        }
        stream: dict[str, Any] = {}
        if sse:
            stream = {"stream": "session" if self.session else "connection"}
            if self.session:
                stream["session"] = self.session
            acp.tap.event("http", **detail, **stream)
        await leg.send(h11.Response(status_code=status, headers=out, reason=response.reason))
        lengths = get_all(raw, b"content-length")
        expected = int(lengths[0]) if lengths and lengths[0].strip().isdigit() else None
        body_task = asyncio.ensure_future(
            relay_body(
                acp,
                up,
                leg,
                sse=sse,
                status=status,
                expected=expected,
                max_size=front.max_size,
                stream=stream,
            )
        )
        gone = asyncio.ensure_future(leg.gone.wait())
        try:
            await asyncio.wait({body_task, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not body_task.done():  # the client left, or we are stopping
                body_task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await body_task
                self.conn.drop_upstream()
            gone.cancel()
        if body_task.cancelled():  # the client left: recorded by relay_body
            leg.abort()
            return False
        ending = body_task.result()
        if not sse:
            acp.tap.event("http", **detail, **ending.body)
        if ending.how != "end":
            self.conn.drop_upstream()
            leg.abort()
            return False
        if self.request.method == b"DELETE" and 200 <= status < 300:
            acp.deleted = True
        return True


async def serve(
    config: ServeConfig,
    writer: RecorderLink,
    stop: asyncio.Event,
    *,
    ready: Callable[[str], None] | None = None,
) -> None:
    """Listen until ``stop`` is set; then end open exchanges (event streams are cut, and
    recorded as ended by us), close WebSocket connections with 1001, end every capture."""
    check_listen_address(config.host, config.admission.token)
    assert config.upstream is not None
    front = Front(config, writer)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: ClientLeg(front.first_request), config.host, config.port
    )
    sock = next(iter(server.sockets))
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    front.acp.listen_url = f"http://{shown}:{port}"
    ws_config = dataclasses.replace(config, upstream=ws_url_of(config.upstream))
    front.upgrades = Upgrades(ws_config, writer, front.capacity, server, f"ws://{shown}:{port}")
    if ready is not None:
        ready(front.acp.listen_url)
    try:
        await stop.wait()
    finally:
        server.close()
        await front.shutdown()

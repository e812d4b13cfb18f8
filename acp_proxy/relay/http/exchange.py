"""One request relayed and recorded, whichever HTTP each leg speaks.

What belongs here: :class:`Exchange`, one request: admitted, read whole, recorded,
relayed upstream; the answer relayed as it comes and recorded (its body by
:func:`acp_proxy.relay.http.body.relay_body`); and :class:`ClientConnection`, what an
exchange needs of the client connection it came on (admission slots, upstream
connections). An HTTP/1.1 request and an HTTP/2 stream (both a
:class:`acp_proxy.transports.http.common.ClientRequest`) are relayed by the same code, to
an upstream leg of either version (:mod:`acp_proxy.relay.http.upstreams`). What crosses
and what is recorded is docs/http.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import urllib.parse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from acp_proxy import events
from acp_proxy.errors import UpstreamError
from acp_proxy.events import UNSET
from acp_proxy.protocol.frames import Direction, Opcode
from acp_proxy.relay.core.admission import Caller, upstream_target
from acp_proxy.relay.http.body import EventStream, relay_body
from acp_proxy.relay.http.connections import AcpConnection, stored_headers
from acp_proxy.relay.http.upstreams import Reply
from acp_proxy.transports.headers import redact_url, without_params
from acp_proxy.transports.http.common import ClientRequest, ClientTimeout
from acp_proxy.transports.http.h2client import reason_of
from acp_proxy.transports.http.headers import decoded, get_all, relay_headers

if TYPE_CHECKING:
    from acp_proxy.relay.http.front import Front

__all__ = ["ClientConnection", "Exchange"]

Raw = list[tuple[bytes, bytes]]
Answered = Callable[..., events.Event]  # the event kind of an answer we give ourselves


class ClientConnection:
    """A client connection: its admission slots and its upstream connections.

    A connection holds one slot of the listener's :class:`~acp_proxy.relay.core.capacity.Capacity`
    from its first request on, and one more for each exchange beyond the first running at
    once (HTTP/2 streams): every exchange in flight commits its ``2 × --max-size``."""

    def __init__(self, front: Front, *, http2_upstream: bool) -> None:
        self.front = front
        self.upstreams = front.upstreams(http2=http2_upstream)
        self.held = 0
        self.running = 0

    def admit(self) -> str | None:
        """A slot for one more exchange; or why not."""
        if self.running >= self.held:
            full = self.front.capacity.admit()
            if full is not None:
                return full
            self.held += 1
        self.running += 1
        return None

    def exchange_done(self) -> None:
        self.running -= 1
        while self.held > max(1, self.running):
            self.front.capacity.release()
            self.held -= 1

    def end(self) -> None:
        for _ in range(self.held):
            self.front.capacity.release()
        self.held = self.running = 0
        self.upstreams.close()


class Exchange:
    """One request: admitted, read whole, recorded, relayed; the answer relayed as it
    comes and recorded. :meth:`run` says whether the client connection may go on."""

    def __init__(self, conn: ClientConnection, request: ClientRequest) -> None:
        self.conn = conn
        self.front = conn.front
        self.client = request
        self.started = time.monotonic_ns()
        self.target = request.target.decode("latin-1")
        cfg = self.front.config
        self.relayed_target = without_params(self.target, cfg.admission.consumes_param)
        ids = get_all(request.headers, b"acp-connection-id")
        self.conn_id = ids[0].decode("latin-1") if ids else None
        sessions = get_all(request.headers, b"acp-session-id")
        self.session = sessions[0].decode("latin-1") if sessions else None
        self.admitted = False

    def request_event(self) -> dict[str, Any]:
        keep = self.front.keep
        return {
            "client": self.client.peer,
            "method": self.client.method.decode("latin-1"),
            "path": redact_url(self.target, keep_secrets=keep),
            "headers": stored_headers(self.client.headers, keep),
            "version": self.client.version,
        }

    async def run(self) -> bool:
        acp = self.front.acp.for_request(self.conn_id, self.relayed_target)
        try:
            return await self._run(acp)
        finally:
            acp.done()
            if self.admitted:
                self.conn.exchange_done()

    async def answer(
        self, acp: AcpConnection, status: int, make: Answered, message: str, **detail: Any
    ) -> bool:
        """Answer the client ourselves (a refusal, an upstream that cannot be reached),
        recording the event ``make`` makes of it."""
        acp.tap.event(make(status=status, error=message, request=self.request_event(), **detail))
        self.front.refusals.refused(
            status,
            f"{self.client.peer} {self.client.method.decode('latin-1')} "
            f"{redact_url(self.target, keep_secrets=False)}: {message}; answered HTTP {status}",
        )
        body = f"acp-proxy: {message}\n".encode()
        headers = [(b"Content-Type", b"text/plain; charset=utf-8")]
        await self.client.send_head(status, reason_of(status), headers, len(body))
        await self.client.send_data(body)
        await self.client.send_end([])
        return self.client.request_done()

    async def _run(self, acp: AcpConnection) -> bool:
        cfg = self.front.config
        client = self.client
        headers = decoded(client.headers)
        if client.authority and not any(n.lower() == "host" for n, _ in headers):
            headers.append(("Host", client.authority.decode("latin-1")))  # HTTP/2 names it so
        refusal = cfg.admission.refusal(Caller.of(self.target, headers))
        if refusal is not None:
            return await self.answer(acp, refusal[0], events.Refused, refusal[1]) and False
        full = self.conn.admit()
        if full is not None:
            return await self.answer(acp, 503, events.Refused, full) and False
        self.admitted = True
        body = await self._read_body(acp)
        if body is None:
            return False
        if body:
            acp.tap.message(Direction.CLIENT_TO_AGENT, body, Opcode.TEXT, time.monotonic_ns())
        target = urllib.parse.urlsplit(upstream_target(cfg.upstream or "", self.relayed_target))
        path = (target.path or "/") + (f"?{target.query}" if target.query else "")
        relayed = relay_headers(client.headers, request=True, consumed=cfg.admission.consumes)
        try:
            reply = await self.conn.upstreams.round_trip(
                client.method,
                path.encode("latin-1"),
                client.headers,
                relayed,
                body,
                client.send_informational,
            )
        except UpstreamError as e:
            shown = redact_url(cfg.upstream or "", keep_secrets=False)
            url = redact_url(cfg.upstream or "", keep_secrets=self.front.keep)
            return await self.answer(
                acp,
                502,
                events.UpstreamFailed,
                f"upstream {shown} unreachable ({e})",
                upstream_url=url,
            )
        try:
            return await self._respond(acp, reply)
        finally:
            self.conn.upstreams.release(reply)

    async def _read_body(self, acp: AcpConnection) -> bytes | None:
        """The whole body, or None when it is over ``--max-size`` (then answered 413) or
        did not come within ``--body-timeout`` (408: its slot is not held any longer)."""
        limit = self.front.max_size
        declared = get_all(self.client.headers, b"content-length")
        if declared and declared[0].strip().isdigit() and int(declared[0]) > limit:
            await self._too_big(acp, int(declared[0]))
            return None
        try:
            body = await self.client.read_body(limit)
        except ClientTimeout as e:
            await self.answer(acp, 408, events.TimedOut, f"{e} (--body-timeout)", direction="c2a")
            return None
        if isinstance(body, int):
            await self._too_big(acp, body)
            return None
        return body

    async def _too_big(self, acp: AcpConnection, size: int) -> None:
        limit = self.front.max_size
        await self.answer(
            acp,
            413,
            events.TooBig,
            f"request body of {size}+ bytes is over --max-size ({limit})",
            direction="c2a",
            size=size,
            limit=limit,
        )

    def _http_event(self, reply: Reply) -> dict[str, Any]:
        """What every ``http`` event of this exchange says first."""
        return {
            "request": self.request_event(),
            "response": {
                "status": reply.status,
                "reason": reply.reason.decode("latin-1"),
                "headers": stored_headers(reply.headers, self.front.keep),
                "version": reply.version,
            },
            "ms": round((time.monotonic_ns() - self.started) / 1e6, 3),
        }

    async def _respond(self, acp: AcpConnection, reply: Reply) -> bool:
        client, raw = self.client, reply.headers
        ids = get_all(raw, b"acp-connection-id")
        if ids and acp.conn_id is None:
            acp.name(ids[0].decode("latin-1"))
        sse = any(
            v.split(b";")[0].strip().lower() == b"text/event-stream"
            for v in get_all(raw, b"content-type")
        )
        detail = self._http_event(reply)
        stream = None
        if sse:
            stream = EventStream("session" if self.session else "connection",
                                 self.session if self.session else UNSET)  # fmt: skip
            acp.tap.event(events.Http(**detail, stream=stream.stream, session=stream.session))
        lengths = get_all(raw, b"content-length")
        chunked = bool(get_all(raw, b"transfer-encoding"))
        expected = int(lengths[0]) if lengths and lengths[0].strip().isdigit() else None
        expected = None if chunked else expected
        await client.send_head(
            reply.status, reply.reason, relay_headers(raw, request=False), expected
        )
        body_task = asyncio.ensure_future(
            relay_body(
                acp, reply, client, sse=sse, expected=expected, max_size=self.front.max_size,
                stream=stream,
            )
        )  # fmt: skip
        gone = asyncio.ensure_future(client.gone.wait())
        try:
            await asyncio.wait({body_task, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not body_task.done():  # the client left, or we are stopping
                body_task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await body_task
            gone.cancel()
        if body_task.cancelled():  # the client left: recorded by relay_body
            client.abort()
            return False
        ending = body_task.result()
        if not sse:
            acp.tap.event(events.Http(**detail, **ending.body))
        if ending.how != "end":
            client.abort()
            return False
        if client.method == b"DELETE" and 200 <= reply.status < 300:
            acp.deleted = True
        return True

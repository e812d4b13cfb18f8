"""The ACP connections behind a Streamable HTTP listener, one capture each.

What belongs here: :class:`AcpConnections`, which finds the capture of each HTTP request,
and :class:`AcpConnection`, one ACP connection's capture. Over Streamable HTTP an ACP
connection is not a TCP connection: it is named by the ``Acp-Connection-Id`` the agent
gives in its answer to ``initialize``, and every later request of it (POSTs, event-stream
GETs, the final DELETE) carries that header, on whatever TCP connections the client likes.
So:

- a request without ``Acp-Connection-Id`` (``initialize``) starts a capture; if its answer
  names a connection id, the capture is that connection's, otherwise it ends with the
  exchange;
- a request with an id goes to that id's capture (a new one when the id was never seen:
  the connection began before the listener did);
- a successful DELETE ends the capture once its last exchange (an event stream still
  draining, say) is done; the listener's end ends them all.

docs/http.md says what each exchange records.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from typing import Any

from acp_proxy import events
from acp_proxy.record.link import CaptureMeta, RecorderLink, Tap
from acp_proxy.transports.headers import redact_headers, redact_url
from acp_proxy.transports.http.headers import decoded

__all__ = ["BODY_KEPT", "AcpConnection", "AcpConnections", "body_field", "stored_headers"]

BODY_KEPT = 64 * 1024  # bytes of a body kept in an event (error answers, refusals)


def stored_headers(headers: Iterable[tuple[bytes, bytes]], keep: bool) -> list[list[str]]:
    return redact_headers(decoded(headers), keep_secrets=keep)


def body_field(data: bytes) -> dict[str, Any]:
    """A body as kept in an event: text when it is UTF-8, else base64; at most
    :data:`BODY_KEPT` bytes of it."""
    out: dict[str, Any] = {"body_size": len(data)}
    part = data[:BODY_KEPT]
    if len(data) > BODY_KEPT:
        out["body_truncated"] = True
    try:
        out["body"] = part.decode("utf-8")
    except UnicodeDecodeError:
        out["body_b64"] = base64.b64encode(part).decode("ascii")
    return out


def raw_field(data: bytes) -> dict[str, str]:
    try:
        return {"raw": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"raw_b64": base64.b64encode(data).decode("ascii")}


class AcpConnection:
    """One ACP connection: its capture and the exchanges of it still running."""

    def __init__(self, registry: AcpConnections, tap: Tap, conn_id: str | None) -> None:
        self.registry = registry
        self.tap = tap
        self.conn_id = conn_id
        self.active = 0
        self.deleted = False
        self.closed = False

    def begin(self) -> None:
        self.active += 1

    def done(self) -> None:
        """An exchange of it is over: a capture nobody named, or a deleted one, ends."""
        self.active -= 1
        if self.active <= 0 and (self.conn_id is None or self.deleted):
            self.close()

    def name(self, conn_id: str) -> None:
        """The answer to ``initialize`` named the connection."""
        if self.conn_id is None:
            self.conn_id = conn_id
            self.registry.by_id.setdefault(conn_id, self)
            self.tap.event(events.Connection(connection_id=conn_id))

    def close(self, **fields: Any) -> None:
        if self.closed:
            return
        self.closed = True
        if self.conn_id is not None and self.registry.by_id.get(self.conn_id) is self:
            del self.registry.by_id[self.conn_id]
        self.registry.all.discard(self)
        self.tap.close(**fields)


class AcpConnections:
    def __init__(
        self,
        writer: RecorderLink,
        *,
        upstream_url: str,
        keep_secrets: bool,
        label: str | None,
    ) -> None:
        self.writer = writer
        self.upstream_url = upstream_url
        self.keep = keep_secrets
        self.label = label
        self.listen_url = ""
        self.by_id: dict[str, AcpConnection] = {}
        self.all: set[AcpConnection] = set()

    def for_request(self, conn_id: str | None, target: str) -> AcpConnection:
        """The capture of a request (``target``: its path and query, ours removed)."""
        if conn_id is not None:
            known = self.by_id.get(conn_id)
            if known is not None and not known.closed:
                known.begin()
                return known
        meta = CaptureMeta(
            transport="http",
            upstream_url=redact_url(self.upstream_url, keep_secrets=self.keep),
            listen_url=self.listen_url + redact_url(target, keep_secrets=self.keep),
            label=self.label,
        )
        acp = AcpConnection(self, self.writer.open_capture(meta), None)
        self.all.add(acp)
        if conn_id is not None:
            acp.name(conn_id)
        acp.begin()
        return acp

    def close_all(self) -> None:
        for acp in list(self.all):
            acp.close()

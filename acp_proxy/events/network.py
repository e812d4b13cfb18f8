"""Connections: WebSocket, Streamable HTTP and the relay's own failures, event by event."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acp_proxy.events.base import (
    UNSET,
    D,
    Event,
    Unset,
    by,
    join,
    mapping,
    number,
    paren,
    size_of,
    status,
    text,
)

# -- connections -----------------------------------------------------------------------------


def _request(d: D) -> str:
    r = mapping(d, "request")
    return join(text(r, "method"), text(r, "path"), sep=" ") or "the request"


@dataclass(frozen=True, slots=True, kw_only=True)
class Handshake(Event):
    """A WebSocket client was admitted and connected (or, for ``record --upstream``, we
    connected to the ``upstream``)."""

    kind = "handshake"

    request: dict[str, Any] | Unset = UNSET
    upstream: dict[str, Any] | Unset = UNSET
    response: dict[str, Any] | Unset = UNSET
    subprotocol: str | None
    handshake_ms: float

    @classmethod
    def line(cls, d: D) -> str:
        who = text(mapping(d, "request"), "client")
        ms = number(d, "handshake_ms")
        return f"WebSocket connected{f' from {who}' if who else ''}" + paren(
            f"{ms:.1f} ms" if ms is not None else None
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Refused(Event):
    """A connection was refused."""

    kind, bad = "refused", True

    status: int
    error: str
    request: dict[str, Any]

    @classmethod
    def line(cls, d: D) -> str:
        return f"refused {status(d)}: {text(d, 'error') or _request(d)}"


@dataclass(frozen=True, slots=True, kw_only=True)
class UpstreamFailed(Event):
    """The upstream could not be reached for a client."""

    kind, bad = "upstream_failed", True

    status: int | Unset = UNSET
    error: str
    request: dict[str, Any] | Unset = UNSET
    upstream_url: str | Unset = UNSET

    @classmethod
    def line(cls, d: D) -> str:
        return f"upstream failed, answered {status(d)}: {text(d, 'error') or '?'}"


@dataclass(frozen=True, slots=True, kw_only=True)
class UpstreamRefused(Event):
    """The upstream refused the WebSocket handshake."""

    kind, bad = "upstream_refused", True

    status: int
    headers: list[Any]
    request: dict[str, Any] | Unset = UNSET

    @classmethod
    def line(cls, d: D) -> str:
        return f"upstream refused the handshake: {status(d)}"


@dataclass(frozen=True, slots=True, kw_only=True)
class HandshakeFailed(Event):
    """The WebSocket handshake with the client failed."""

    kind, bad = "handshake_failed", True

    status: int
    request: dict[str, Any]

    @classmethod
    def line(cls, d: D) -> str:
        return f"WebSocket handshake failed: {status(d)}"


@dataclass(frozen=True, slots=True, kw_only=True)
class TimedOut(Event):
    """A client's request body did not come within ``--body-timeout``: answered 408."""

    kind, bad = "timed_out", True

    status: int
    error: str
    request: dict[str, Any]
    direction: str

    @classmethod
    def line(cls, d: D) -> str:
        return f"request timed out, answered {status(d)}: {text(d, 'error') or '?'}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Abandoned(Event):
    """The client left before its connection was relayed."""

    kind = "abandoned"

    reason: str

    @classmethod
    def line(cls, d: D) -> str:
        return f"abandoned: {text(d, 'reason') or 'the client left'}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Close(Event):
    """A WebSocket side closed."""

    kind = "close"

    side: str
    how: str
    by: str
    code: int | Unset = UNSET
    reason: str | Unset = UNSET
    error: str | Unset = UNSET
    exit_code: int | Unset = UNSET
    signal: int | Unset = UNSET

    @classmethod
    def line(cls, d: D) -> str:
        side, code, reason = text(d, "side") or "a side", number(d, "code"), text(d, "reason")
        how = f" with {int(code)}" if code is not None else ""
        return f"{side} closed{how}" + (f" {reason!r}" if reason else "") + by(d)


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamEnd(Event):
    """A stream ended otherwise than by a close: a ``side`` of a relay, or an HTTP event
    ``stream`` with its ``events``, ``bytes`` and the index of each of its ``messages``."""

    kind = "stream_end"

    side: str | Unset = UNSET
    stream: str | Unset = UNSET
    session: str | Unset = UNSET
    how: str
    by: str
    code: int | Unset = UNSET
    reason: str | Unset = UNSET
    events: int | Unset = UNSET
    bytes_: int | Unset = UNSET
    messages: list[int] | Unset = UNSET
    error: str | Unset = UNSET
    exit_code: int | Unset = UNSET
    signal: int | Unset = UNSET
    incomplete: dict[str, str] | Unset = UNSET

    @classmethod
    def line(cls, d: D) -> str:
        what = text(d, "side") or (
            f"{text(d, 'stream')} event stream" if text(d, "stream") else "a stream"
        )
        size, events = size_of(number(d, "bytes")), number(d, "events")
        counts = paren(f"{int(events)} event(s)" if events is not None else None, size)
        return f"{what} ended: {text(d, 'how') or '?'}{counts}{by(d)}"


@dataclass(frozen=True, slots=True, kw_only=True)
class DirectionEnd(Event):
    """One direction of a WebSocket relay ended."""

    kind = "direction_end"

    direction: str
    delivered: int
    undelivered: int | Unset = UNSET
    embedded_newlines: int | Unset = UNSET

    @classmethod
    def line(cls, d: D) -> str:
        n, lost = number(d, "delivered"), number(d, "undelivered")
        return f"{text(d, 'direction') or '?'} done: {int(n or 0)} delivered" + (
            f", {int(lost)} not delivered" if lost else ""
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class TooBig(Event):
    """A message over the size limit ended the connection (``--max-message``), or a request
    body over ``--max-size`` was answered 413."""

    kind, bad = "too_big", True

    status: int | Unset = UNSET
    error: str | Unset = UNSET
    request: dict[str, Any] | Unset = UNSET
    direction: str
    side: str | Unset = UNSET
    size: int | Unset = UNSET
    limit: int | Unset = UNSET

    @classmethod
    def line(cls, d: D) -> str:
        return f"message too big from the {text(d, 'side') or '?'}: connection closed (1009)"


@dataclass(frozen=True, slots=True, kw_only=True)
class Error(Event):
    """The relay failed."""

    kind, bad = "error", True

    error: str

    @classmethod
    def line(cls, d: D) -> str:
        return f"relay error: {text(d, 'error') or '?'}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Connection(Event):
    """A Streamable HTTP exchange named the ACP connection."""

    kind = "connection"

    connection_id: str

    @classmethod
    def line(cls, d: D) -> str:
        return f"ACP connection {text(d, 'connection_id') or '?'}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Http(Event):
    """One HTTP exchange relayed (an event stream's, when it began; any other, with its
    body, when it ended)."""

    kind = "http"

    request: dict[str, Any]
    response: dict[str, Any]
    ms: float
    stream: str | Unset = UNSET
    session: str | Unset = UNSET
    how: str | Unset = UNSET
    error: str | Unset = UNSET
    body_size: int | Unset = UNSET
    body: str | Unset = UNSET
    body_b64: str | Unset = UNSET
    body_truncated: bool | Unset = UNSET

    @classmethod
    def line(cls, d: D) -> str:
        resp = mapping(d, "response")
        status = number(resp, "status")
        ms = number(d, "ms")
        stream = text(d, "stream")
        how = text(d, "how")
        return f"{_request(d)} → {int(status) if status is not None else '?'}" + paren(
            f"{ms:.1f} ms" if ms is not None else None,
            size_of(number(d, "body_size")),
            f"{stream} event stream" if stream else None,
            how,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Sse(Event):
    """An event of an HTTP event stream kept for its exact bytes: one that carried the a2c
    ``message`` of that index in a form other than ``data: …``, or none, ``before`` it."""

    kind = "sse"

    stream: str
    session: str | Unset = UNSET
    message: int | Unset = UNSET
    before: int | Unset = UNSET
    raw: str | Unset = UNSET
    raw_b64: str | Unset = UNSET

    @classmethod
    def line(cls, d: D) -> str:
        return f"server-sent event on the {text(d, 'stream') or '?'} stream"


@dataclass(frozen=True, slots=True, kw_only=True)
class BodyEnd(Event):
    """An HTTP body ended early."""

    kind, bad = "body_end", True

    how: str
    body_size: int

    @classmethod
    def line(cls, d: D) -> str:
        return f"HTTP body ended: {text(d, 'how') or '?'}" + paren(size_of(number(d, "body_size")))

"""Connections: WebSocket, Streamable HTTP and the relay's own failures, event by event."""

from __future__ import annotations

from acp_proxy.events.base import (
    D,
    Event,
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


class Handshake(Event):
    """A WebSocket client was admitted and connected (``request``, ``upstream``,
    ``subprotocol``, ``handshake_ms``)."""

    kind = "handshake"

    @classmethod
    def line(cls, d: D) -> str:
        who = text(mapping(d, "request"), "client")
        ms = number(d, "handshake_ms")
        return f"WebSocket connected{f' from {who}' if who else ''}" + paren(
            f"{ms:.1f} ms" if ms is not None else None
        )


class Refused(Event):
    """A connection was refused (``status``, ``error``, ``request``)."""

    kind, bad = "refused", True

    @classmethod
    def line(cls, d: D) -> str:
        return f"refused {status(d)}: {text(d, 'error') or _request(d)}"


class UpstreamFailed(Event):
    """The upstream could not be reached for a client (``status``, ``error``)."""

    kind, bad = "upstream_failed", True

    @classmethod
    def line(cls, d: D) -> str:
        return f"upstream failed, answered {status(d)}: {text(d, 'error') or '?'}"


class UpstreamRefused(Event):
    """The upstream refused the WebSocket handshake (``status``, ``headers``)."""

    kind, bad = "upstream_refused", True

    @classmethod
    def line(cls, d: D) -> str:
        return f"upstream refused the handshake: {status(d)}"


class HandshakeFailed(Event):
    """The WebSocket handshake with the client failed (``status``)."""

    kind, bad = "handshake_failed", True

    @classmethod
    def line(cls, d: D) -> str:
        return f"WebSocket handshake failed: {status(d)}"


class Abandoned(Event):
    """The client left before its connection was relayed (``reason``)."""

    kind = "abandoned"

    @classmethod
    def line(cls, d: D) -> str:
        return f"abandoned: {text(d, 'reason') or 'the client left'}"


class Close(Event):
    """A WebSocket side closed (``side``, ``how``, ``by``, ``code``, ``reason``)."""

    kind = "close"

    @classmethod
    def line(cls, d: D) -> str:
        side, code, reason = text(d, "side") or "a side", number(d, "code"), text(d, "reason")
        how = f" with {int(code)}" if code is not None else ""
        return f"{side} closed{how}" + (f" {reason!r}" if reason else "") + by(d)


class StreamEnd(Event):
    """A stream ended otherwise than by a close (``side`` or ``stream``, ``how``, ``by``;
    an HTTP event stream also ``events``, ``bytes``, ``messages``)."""

    kind = "stream_end"

    @classmethod
    def line(cls, d: D) -> str:
        what = text(d, "side") or (
            f"{text(d, 'stream')} event stream" if text(d, "stream") else "a stream"
        )
        size, events = size_of(number(d, "bytes")), number(d, "events")
        counts = paren(f"{int(events)} event(s)" if events is not None else None, size)
        return f"{what} ended: {text(d, 'how') or '?'}{counts}{by(d)}"


class DirectionEnd(Event):
    """One direction of a WebSocket relay ended (``direction``, ``delivered``,
    ``undelivered``)."""

    kind = "direction_end"

    @classmethod
    def line(cls, d: D) -> str:
        n, lost = number(d, "delivered"), number(d, "undelivered")
        return f"{text(d, 'direction') or '?'} done: {int(n or 0)} delivered" + (
            f", {int(lost)} not delivered" if lost else ""
        )


class TooBig(Event):
    """A message over ``--max-message`` ended the connection (``direction``, ``side``)."""

    kind, bad = "too_big", True

    @classmethod
    def line(cls, d: D) -> str:
        return f"message too big from the {text(d, 'side') or '?'}: connection closed (1009)"


class Error(Event):
    """The relay failed (``error``)."""

    kind, bad = "error", True

    @classmethod
    def line(cls, d: D) -> str:
        return f"relay error: {text(d, 'error') or '?'}"


class Connection(Event):
    """A Streamable HTTP exchange named the ACP connection (``connection_id``)."""

    kind = "connection"

    @classmethod
    def line(cls, d: D) -> str:
        return f"ACP connection {text(d, 'connection_id') or '?'}"


class Http(Event):
    """One HTTP exchange relayed (``request``, ``response``, ``ms``, ``body_size``; an
    event stream's ``stream``)."""

    kind = "http"

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


class Sse(Event):
    """An event of an HTTP event stream that carried no message, or before one
    (``stream``, ``message`` or ``before``)."""

    kind = "sse"

    @classmethod
    def line(cls, d: D) -> str:
        return f"server-sent event on the {text(d, 'stream') or '?'} stream"


class BodyEnd(Event):
    """An HTTP body ended early (``how``, ``body_size``)."""

    kind, bad = "body_end", True

    @classmethod
    def line(cls, d: D) -> str:
        return f"HTTP body ended: {text(d, 'how') or '?'}" + paren(size_of(number(d, "body_size")))

"""The header policy of a relayed HTTP/1.1 exchange (no I/O).

What belongs here: which request and response headers go on to the other leg. End-to-end
headers are relayed in order, duplicates kept, names spelled as received. Hop-by-hop
headers are not (RFC 9110 §7.6.1): ``Connection`` and every header it names,
``Keep-Alive``, ``Proxy-*``, ``TE``, ``Upgrade``, and the message framing
(``Transfer-Encoding``, ``Content-Length``), which :func:`framing` gives back for the other
leg: the same ``Content-Length`` when the sender gave one (the body is relayed unchanged),
otherwise chunked. A request's ``Host`` names the upstream; ``Expect`` is answered here
(the body is read before it is forwarded). What of a header is stored is
:func:`acp_proxy.transports.headers.redact_headers`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

__all__ = ["HOP_BY_HOP", "connection_tokens", "decoded", "framing", "get_all", "relay_headers"]

Raw = list[tuple[bytes, bytes]]

HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"content-length",
        b"http2-settings",
    }
)
_REQUEST_ONLY = frozenset({b"host", b"expect"})


def get_all(headers: Iterable[tuple[bytes, bytes]], name: bytes) -> list[bytes]:
    n = name.lower()
    return [v for k, v in headers if k.lower() == n]


def connection_tokens(headers: Iterable[tuple[bytes, bytes]]) -> set[bytes]:
    out: set[bytes] = set()
    for value in get_all(headers, b"connection"):
        out.update(t.strip().lower() for t in value.split(b",") if t.strip())
    return out


def relay_headers(
    headers: Raw,
    *,
    request: bool,
    consumed: Callable[[str, str], bool] | None = None,
) -> Raw:
    """The end-to-end headers of ``headers``; ``consumed(name, value)`` says which are
    credentials meant for us (our token), not relayed."""
    skip = HOP_BY_HOP | connection_tokens(headers)
    if request:
        skip |= _REQUEST_ONLY
    out: Raw = []
    for name, value in headers:
        low = name.lower()
        if low in skip:
            continue
        if consumed is not None and consumed(name.decode("latin-1"), value.decode("latin-1")):
            continue
        out.append((name, value))
    return out


def framing(headers: Raw, *, request: bool) -> Raw:
    """The framing header for the other leg: the sender's ``Content-Length``, or chunked
    when it sent chunked or (a response) nothing, its body then ending with the connection.
    A request with neither has no body."""
    chunked = bool(get_all(headers, b"transfer-encoding"))
    lengths = get_all(headers, b"content-length")
    if lengths and not chunked:
        return [(b"Content-Length", lengths[0])]
    if chunked or not request:
        return [(b"Transfer-Encoding", b"chunked")]
    return []


def decoded(headers: Iterable[tuple[bytes, bytes]]) -> list[tuple[str, str]]:
    """Headers as text (HTTP header bytes are Latin-1), for admission and storage."""
    return [(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers]

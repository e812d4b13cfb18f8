"""The header and URL policy of a WebSocket upgrade (no I/O).

What belongs here: which upgrade headers are relayed (end to end) and which are per leg
(hop by hop), and what of a header or URL is stored when a handshake is recorded.

Storing is by **allow-list**: a header keeps its value only when its name is in
:data:`KEPT_HEADERS` — headers whose values are known to carry no secret (the host, the
client's software, content negotiation, the WebSocket version and extensions, the origin,
dates, ACP's connection and session ids). Every other header is stored with its name and
``[redacted]`` for a value, whatever it is called (``X-Auth``, ``Sec-WebSocket-Protocol``
with a token in it…); only the scheme of a credential (``Bearer``, ``Basic``…) and the
names and attributes of cookies are kept of those, since they say how a peer authenticated
without saying with what. In a URL, userinfo, every query parameter's value and the
fragment are redacted; the parameters' names are kept. ``keep_secrets``
(``--keep-secrets``) stores everything as sent.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Iterable

from websockets.datastructures import Headers

__all__ = [
    "HOP_BY_HOP",
    "KEPT_HEADERS",
    "REDACTED",
    "redact_headers",
    "redact_subprotocol",
    "redact_url",
    "relay_request_headers",
    "relay_response_headers",
    "subprotocols_of",
    "without_params",
]

REDACTED = "[redacted]"

# Hop-by-hop or per-leg handshake headers: never relayed, each leg has its own.
HOP_BY_HOP = frozenset(
    h.lower()
    for h in (
        "Connection",
        "Keep-Alive",
        "Proxy-Authenticate",
        "Proxy-Authorization",
        "Proxy-Connection",
        "TE",
        "Trailer",
        "Transfer-Encoding",
        "Upgrade",
        "Content-Length",
        "Host",
        "Sec-WebSocket-Key",
        "Sec-WebSocket-Accept",
        "Sec-WebSocket-Version",
        "Sec-WebSocket-Extensions",
        "Sec-WebSocket-Protocol",  # relayed through subprotocol negotiation instead
    )
)

# Headers stored with their values: none of them carries a credential. (The WebSocket key
# and accept values are a nonce and its hash, not secrets.)
KEPT_HEADERS = frozenset(
    h.lower()
    for h in (
        "Host",
        "User-Agent",
        "Server",
        "Date",
        "Accept",
        "Accept-Encoding",
        "Accept-Language",
        "Content-Type",
        "Content-Length",
        "Content-Encoding",
        "Cache-Control",
        "Pragma",
        "Connection",
        "Upgrade",
        "Vary",
        "Origin",
        "Sec-WebSocket-Version",
        "Sec-WebSocket-Extensions",
        "Sec-WebSocket-Key",
        "Sec-WebSocket-Accept",
        "Acp-Connection-Id",
        "Acp-Session-Id",
        "Acp-Protocol-Version",
    )
)
_CREDENTIALS = frozenset({"authorization", "proxy-authorization"})
_SCHEMES = frozenset({"basic", "bearer", "digest", "negotiate", "ntlm", "token", "hoba"})


def _connection_tokens(headers: Headers) -> set[str]:
    out: set[str] = set()
    for value in headers.get_all("Connection"):
        out.update(t.strip().lower() for t in value.split(",") if t.strip())
    return out


def relay_request_headers(
    headers: Headers, *, consumed: Callable[[str, str], bool] | None = None
) -> list[tuple[str, str]]:
    """The client's end-to-end upgrade headers, in order, duplicates kept.

    ``consumed(name, value)``: whether a header is a credential meant for us (our
    ``--token``), which is consumed here rather than relayed.
    """
    skip = HOP_BY_HOP | _connection_tokens(headers)
    out: list[tuple[str, str]] = []
    for name, value in headers.raw_items():
        if name.lower() in skip or (consumed is not None and consumed(name, value)):
            continue
        out.append((name, value))
    return out


def relay_response_headers(headers: Headers) -> list[tuple[str, str]]:
    """The upstream's end-to-end 101 headers (``Acp-Connection-Id``, ``Set-Cookie``,
    ``Server``, ``Date``, …), for our 101 to the client."""
    skip = HOP_BY_HOP | _connection_tokens(headers)
    return [(n, v) for n, v in headers.raw_items() if n.lower() not in skip]


def subprotocols_of(headers: Headers) -> list[str]:
    out: list[str] = []
    for value in headers.get_all("Sec-WebSocket-Protocol"):
        out.extend(p.strip() for p in value.split(",") if p.strip())
    return out


def _redact_value(name: str, value: str) -> str:
    lname = name.lower()
    if lname in _CREDENTIALS:
        scheme, _, rest = value.strip().partition(" ")
        return f"{scheme} {REDACTED}" if rest and scheme.lower() in _SCHEMES else REDACTED
    if lname == "cookie":
        parts = [p.strip() for p in value.split(";") if p.strip()]
        return "; ".join(f"{p.partition('=')[0]}={REDACTED}" for p in parts)
    if lname == "set-cookie":
        first, sep, attrs = value.partition(";")
        return f"{first.partition('=')[0]}={REDACTED}{sep}{attrs}"
    return REDACTED


def redact_headers(headers: Iterable[tuple[str, str]], *, keep_secrets: bool) -> list[list[str]]:
    """Headers as stored in events: the value of every header not in
    :data:`KEPT_HEADERS` redacted."""
    out: list[list[str]] = []
    for name, value in headers:
        if not keep_secrets and name.lower() not in KEPT_HEADERS:
            value = _redact_value(name, value)
        out.append([name, value])
    return out


def redact_subprotocol(name: str | None, *, keep_secrets: bool) -> str | None:
    """The subprotocol selected, as stored: a ``Sec-WebSocket-Protocol`` value like any
    other, so redacted (some clients carry a token in it)."""
    return name if keep_secrets or name is None else REDACTED


def redact_url(url: str, *, keep_secrets: bool) -> str:
    """A URL or request target as stored: userinfo and the value of every query parameter
    redacted, and a fragment; the rest, and the parameters' names, as written."""
    if keep_secrets:
        return url
    parts = urllib.parse.urlsplit(url)
    query = "&".join(
        f"{name}={REDACTED}" if sep and value else item
        for item in parts.query.split("&")
        for name, sep, value in (item.partition("="),)
    )
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rpartition('@')[2]}"
    fragment = REDACTED if parts.fragment else ""
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def without_params(target: str, consumed: Callable[[str, str], bool]) -> str:
    """``target`` (path and query) without the query parameters meant for us:
    ``consumed(name, value)`` is asked with both decoded."""
    path, sep, query = target.partition("?")
    if not sep:
        return target
    kept = [
        item
        for item in query.split("&")
        if not any(consumed(k, v) for k, v in urllib.parse.parse_qsl(item, keep_blank_values=True))
    ]
    return f"{path}?{'&'.join(kept)}" if kept else path

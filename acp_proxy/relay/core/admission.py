"""Who may connect to a listener (pure: our own values in, a refusal or none out).

What belongs here: the admission rules (loopback unless a token is given, a token that is
one word, a ``Host`` that names the listener, browser origins refused, the token never
relayed further) over what a request asks with (:class:`Caller`: its target and the
headers admission reads, whichever library parsed them), and the upstream URL a client
connection is relayed to. The WebSocket and Streamable HTTP listeners, the replay's
listener and the web inspector apply the same rules.

The ``Host`` rule is against DNS rebinding: a page of another site whose name is made to
resolve to 127.0.0.1 may send requests to a loopback listener from the user's browser as
its own origin, with no ``Origin`` header on a ``GET``, but its ``Host`` is still its own
name. So a loopback listener answers only loopback names and addresses (``localhost``,
``127.0.0.1``, ``[::1]``, any port) and the names given with ``--allow-host``; a listener
on another address needs a token, which such a page does not have.
"""

from __future__ import annotations

import dataclasses
import hmac
import ipaddress
import urllib.parse
from collections.abc import Iterable, Sequence

from acp_proxy.errors import UsageError

__all__ = [
    "Admission",
    "Caller",
    "check_listen_address",
    "check_token",
    "host_allowed",
    "hosts_for",
    "is_loopback",
    "is_wildcard",
    "listen_address",
    "upstream_target",
]


def check_token(token: str | None) -> None:
    """A token is one word: blank, spaced or with control characters it would admit
    nobody, or every client that sends an empty credential (HTTP strips the spaces)."""
    if token is None:
        return
    if not token.strip():
        raise UsageError("--token is empty or blank; give a secret (e.g. openssl rand -hex 16)")
    if any(c.isspace() or not c.isprintable() for c in token):
        raise UsageError("--token must be one word, without spaces or control characters")


def is_wildcard(host: str) -> bool:
    """Whether ``host`` is an address that listens on every interface (``0.0.0.0``, ``::``)."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine's loopback."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_allowed(
    header: str | None,
    listen_host: str,
    *,
    port: int | None = None,
    allowed: frozenset[str] = frozenset(),
) -> bool:
    """Whether a request's ``Host`` names the listener on ``listen_host``: a loopback name
    or address, the address it listens on, or a name in ``allowed``; on a wildcard address
    (``0.0.0.0``, ``::``) any IP address too (DNS rebinding needs a name, never an
    address). With ``port``, the ``Host`` must name that port too (the web inspector,
    whose pages name it); without, any port (a relay reached through a forwarded port)."""
    if not header:
        return False
    try:
        parts = urllib.parse.urlsplit("//" + header)
        name, given = parts.hostname, parts.port
    except ValueError:
        return False
    if name is None or parts.username is not None or parts.path or parts.query:
        return False
    if port is not None and given != port:
        return False
    listen = listen_host.strip("[]").lower()
    if is_loopback(name) or name == listen or name in {a.lower() for a in allowed}:
        return True
    if is_wildcard(listen_host):
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return False
        return True
    return False


def hosts_for(listen_host: str, allow_hosts: Sequence[str]) -> frozenset[str] | None:
    """The ``Host`` names a relay on ``listen_host`` answers besides loopback ones
    (:attr:`Admission.hosts`): ``allow_hosts`` on loopback; on another address, None
    (any: a token is required there, and a rebinding page has none)."""
    return frozenset(allow_hosts) if is_loopback(listen_host) else None


@dataclasses.dataclass(frozen=True, slots=True)
class Caller:
    """What admission reads of a request: its target (path and query, as sent) and the
    values of the ``Host``, ``Origin`` and ``Authorization`` headers, each as many times as
    it was sent."""

    target: str
    hosts: tuple[str, ...] = ()
    origins: tuple[str, ...] = ()
    authorizations: tuple[str, ...] = ()

    @classmethod
    def of(cls, target: str, headers: Iterable[tuple[str, str]]) -> Caller:
        """From a request's target and its header pairs (names in any case, in order)."""
        seen: dict[str, list[str]] = {"host": [], "origin": [], "authorization": []}
        for name, value in headers:
            kept = seen.get(name.lower())
            if kept is not None:
                kept.append(value)
        return cls(target, tuple(seen["host"]), tuple(seen["origin"]), tuple(seen["authorization"]))


@dataclasses.dataclass(frozen=True, slots=True)
class Admission:
    """Who may connect: a ``Host`` naming the listener, a bearer token (header or
    ``?token=``) and allowed browser origins.

    A request whose ``Host`` is not a loopback name or address nor one of ``hosts`` is
    refused with 421, as is one with no ``Host`` or several (``hosts`` None: any ``Host``).
    A request with an ``Origin`` header not in ``allow_origins`` is refused (a page in the
    user's browser must not reach a local agent through us; docs/design.md principle 6), and so
    is one with several.

    The token is ours: :meth:`consumes` and :meth:`consumes_param` say which headers and
    query parameters carry it, however they are spelled, so it never goes further.
    """

    token: str | None = None
    allow_origins: frozenset[str] = frozenset()
    hosts: frozenset[str] | None = frozenset()

    def __post_init__(self) -> None:
        check_token(self.token)

    def refusal(self, caller: Caller) -> tuple[int, str] | None:
        """Why ``caller`` is refused (the HTTP status and one line), or None."""
        if self.hosts is not None:
            hosts = caller.hosts
            if len(hosts) != 1 or not host_allowed(hosts[0], "localhost", allowed=self.hosts):
                if len(hosts) != 1:
                    return 421, f"{len(hosts)} Host headers (a request has one)"
                return 421, f"Host {hosts[0]!r} does not name this listener (--allow-host)"
        origins = caller.origins
        if len(origins) > 1:
            return 403, f"{len(origins)} Origin headers (a request has at most one)"
        if origins and origins[0] not in self.allow_origins:
            return 403, f"origin {origins[0]!r} is not allowed (--allow-origin)"
        if self.token is not None and not self._token_ok(caller):
            return 401, "missing or wrong token (Authorization: Bearer TOKEN or ?token=TOKEN)"
        return None

    def _is_token(self, word: str) -> bool:
        assert self.token is not None
        return hmac.compare_digest(word.encode(), self.token.encode())

    def _token_ok(self, caller: Caller) -> bool:
        for value in caller.authorizations:
            words = value.split()
            if len(words) == 2 and words[0].lower() == "bearer" and self._is_token(words[1]):
                return True
        query = urllib.parse.urlsplit(caller.target).query
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


def listen_address(text: str) -> tuple[str, int]:
    """``--listen HOST:PORT``, as every listener takes it: a name or an address (an IPv6
    one in brackets or not), ``127.0.0.1`` when only ``:PORT`` is given, a port up to 65535
    (0: any free port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise UsageError(f"--listen wants HOST:PORT (e.g. 127.0.0.1:8765), not {text!r}")
    n = int(port)
    if n > 65535:
        raise UsageError(f"--listen port {n} is out of range")
    return host.strip("[]") or "127.0.0.1", n


def check_listen_address(host: str, token: str | None) -> None:
    """Refuse a non-loopback listener without a token (docs/design.md principle 6)."""
    if not token and not is_loopback(host):
        raise UsageError(
            f"refusing to listen on {host}, which is not loopback, without --token "
            "(clients then send Authorization: Bearer TOKEN or ?token=TOKEN)"
        )


def upstream_target(upstream: str, client_target: str) -> str:
    """The URL to dial: the upstream's scheme and host, the client's path and query (the
    upstream URL's own path and query are used when the client asked for ``/``)."""
    base = urllib.parse.urlsplit(upstream)
    path, _, query = client_target.partition("?")
    if path in ("", "/") and not query:
        return upstream
    if path in ("", "/"):
        path = base.path or "/"
    return urllib.parse.urlunsplit((base.scheme, base.netloc, path, query, ""))

"""Who the web inspector answers: the checks every request passes before anything is read.

What belongs here: a request's ``Host`` must name this server (a page on another site
that rebinds its DNS name to 127.0.0.1 is refused), an ``Origin``, when sent, must be this
server's, a cross-site fetch of the API is refused, and with ``--token`` the API wants it
(``Authorization: Bearer`` or ``?token=``; the rules of
:class:`acp_proxy.relay.listener.Admission`). A refusal is a :class:`Refused` with its
HTTP status.
"""

from __future__ import annotations

import ipaddress
import urllib.parse
from email.message import Message

from websockets.datastructures import Headers
from websockets.http11 import Request

from acp_proxy.relay.admission import Admission

__all__ = ["Refused", "admit", "host_allowed", "is_wildcard"]


def is_wildcard(host: str) -> bool:
    """Whether ``host`` is an address that listens on every interface (``0.0.0.0``, ``::``)."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def host_allowed(header: str | None, listen_host: str, port: int) -> bool:
    """Whether a request's ``Host`` names this server: a loopback name or the address it
    listens on, with its port. On a wildcard address (``0.0.0.0``, ``::``), any IP address
    is accepted too: a DNS rebinding attack needs a name, never an address."""
    if not header:
        return False
    try:
        parts = urllib.parse.urlsplit("//" + header)
        name, given = parts.hostname, parts.port
    except ValueError:
        return False
    if name is None or given != port or parts.username or parts.path:
        return False
    listen = listen_host.strip("[]").lower()
    if name in ("127.0.0.1", "localhost", "::1", listen):
        return True
    if is_wildcard(listen_host):
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return False
        return True
    return False


class Refused(Exception):
    """A request this server does not answer: ``status`` and a one-line reason."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def admit(
    request_headers: Message, path: str, host: str, port: int, token: str | None, needs_token: bool
) -> None:
    """Raise :class:`Refused` unless the request (its headers, its path with the query) may
    be answered by the server listening on ``host``:``port`` (with ``token``, if any)."""
    given = request_headers.get("Host")
    if len(request_headers.get_all("Host") or []) != 1 or not host_allowed(given, host, port):
        raise Refused(421, "this server does not answer for that Host")
    site = request_headers.get("Sec-Fetch-Site")
    if needs_token and site not in (None, "same-origin", "none"):
        raise Refused(403, f"cross-site request refused (Sec-Fetch-Site: {site})")
    headers = Headers()
    for k, v in request_headers.items():
        headers[k] = v
    admission = Admission(
        token=token if needs_token else None,
        allow_origins=frozenset({f"http://{given}"}),
    )
    refused = admission.refusal(Request(path, headers))
    if refused is not None:
        status, message = refused
        if status == 403:  # an Origin: only this server's own pages may ask
            message = f"cross-origin request refused ({message.split(' is ')[0]})"
        raise Refused(status, message)

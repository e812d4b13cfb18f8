"""Who the web inspector answers: the checks every request passes before anything is read.

What belongs here: a request's ``Host`` must name this server and its port (a page on
another site that rebinds its DNS name to 127.0.0.1 is refused; the rule is
:func:`acp_proxy.relay.core.admission.host_allowed`, with the names of ``--allow-host``),
an ``Origin``, when sent, must be this server's, a cross-site fetch of the API is refused,
and with ``--token`` the API wants it (``Authorization: Bearer`` or ``?token=``; the rules
of :class:`acp_proxy.relay.core.admission.Admission`, handed the request as a
:class:`~acp_proxy.relay.core.admission.Caller`). A refusal is a :class:`NotAdmitted` with its
HTTP status.
"""

from __future__ import annotations

from email.message import Message

from acp_proxy.relay.core.admission import Admission, Caller, host_allowed

__all__ = ["NotAdmitted", "admit"]


class NotAdmitted(Exception):
    """A request this server does not answer: ``status`` and a one-line reason."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def admit(
    request_headers: Message,
    path: str,
    host: str,
    port: int,
    token: str | None,
    needs_token: bool,
    allowed: frozenset[str] = frozenset(),
) -> None:
    """Raise :class:`NotAdmitted` unless the request (its headers, its path with the query) may
    be answered by the server listening on ``host``:``port`` (with ``token``, if any;
    ``allowed``: more ``Host`` names to answer)."""
    given = request_headers.get("Host")
    named = host_allowed(given, host, port=port, allowed=allowed)
    if len(request_headers.get_all("Host") or []) != 1 or not named:
        raise NotAdmitted(421, "this server does not answer for that Host")
    site = request_headers.get("Sec-Fetch-Site")
    if needs_token and site not in (None, "same-origin", "none"):
        raise NotAdmitted(403, f"cross-site request refused (Sec-Fetch-Site: {site})")
    admission = Admission(
        token=token if needs_token else None,
        allow_origins=frozenset({f"http://{given}"}),
        hosts=None,  # checked above, with the port
    )
    refused = admission.refusal(Caller.of(path, request_headers.items()))
    if refused is not None:
        status, message = refused
        if status == 403:  # an Origin: only this server's own pages may ask
            message = f"cross-origin request refused ({message.split(' is ')[0]})"
        raise NotAdmitted(status, message)

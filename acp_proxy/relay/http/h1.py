"""A client connection that speaks HTTP/1.1: its requests relayed one after another.

What belongs here: :class:`H1ClientConnection`, which runs one exchange
(:class:`acp_proxy.relay.http.exchange.Exchange`) per request of the connection, and the
``Upgrade: h2c`` dance: a request that asks for HTTP/2 (``Upgrade: h2c``, one
``HTTP2-Settings`` that decodes, both named by ``Connection``) and has no body is answered
``101 Switching Protocols``, and the connection goes on as HTTP/2
(:mod:`acp_proxy.relay.http.h2`), that request being its stream 1. A request with a body
that asks for it is answered in HTTP/1.1, as HTTP allows.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

import h2.exceptions as h2_errors
import h11

from acp_proxy.relay.http.exchange import ClientConnection, Exchange
from acp_proxy.relay.http.h2 import H2ClientConnection
from acp_proxy.transports.http.common import ClientGone
from acp_proxy.transports.http.h2client import H2Request
from acp_proxy.transports.http.headers import connection_tokens, get_all
from acp_proxy.transports.http.legs import ClientLeg, H1Request

if TYPE_CHECKING:
    from acp_proxy.relay.http.front import Front

__all__ = ["H1ClientConnection", "asks_h2c"]


def _settings_ok(values: list[bytes]) -> bool:
    """One ``HTTP2-Settings``: a SETTINGS payload (6-byte entries) in base64url."""
    if len(values) != 1:
        return False
    value = values[0].strip()
    try:
        standard = value.replace(b"-", b"+").replace(b"_", b"/") + b"=" * (-len(value) % 4)
        payload = base64.b64decode(standard, validate=True)
    except ValueError:
        return False
    return len(payload) % 6 == 0


def asks_h2c(request: h11.Request) -> bool:
    """Whether ``request`` asks to go on in HTTP/2 and can (it has no body)."""
    headers = list(request.headers.raw_items())
    upgrade = b",".join(get_all(headers, b"upgrade")).lower()
    offered = {t.strip() for t in upgrade.split(b",")}
    lengths = get_all(headers, b"content-length")
    return (
        b"h2c" in offered
        and _settings_ok(get_all(headers, b"http2-settings"))
        and {b"upgrade", b"http2-settings"} <= connection_tokens(headers)
        and not get_all(headers, b"transfer-encoding")
        and all(v.strip() == b"0" for v in lengths)
    )


class H1ClientConnection(ClientConnection):
    def __init__(self, front: Front, leg: ClientLeg) -> None:
        super().__init__(front, http2_upstream=front.http2_upstream(False))
        self.leg = leg
        self.upgraded = False

    async def run(self) -> None:
        leg = self.leg
        event: Any = leg.request
        try:
            while isinstance(event, h11.Request):
                if asks_h2c(event):
                    await self._upgrade(event)
                    return
                if not await Exchange(self, H1Request(leg, event)).run() or not leg.reusable():
                    break
                event = await leg.next_request()
        except (h11.ProtocolError, ClientGone, OSError):
            pass
        finally:
            if not self.upgraded:
                self.end()
                leg.close()

    async def _upgrade(self, request: h11.Request) -> None:
        """Answer 101 and go on in HTTP/2 with ``request`` as stream 1; the connection's
        slot goes with it."""
        leg = self.leg
        h1 = H1Request(leg, request)
        await h1.read_body(0)  # nothing: the request ends here
        upgrade = [(b"Connection", b"Upgrade"), (b"Upgrade", b"h2c")]
        await leg.send(
            h11.InformationalResponse(
                status_code=101, headers=upgrade, reason=b"Switching Protocols"
            )
        )
        transport, rest = leg.hand_over()
        h2 = H2ClientConnection(self.front, prior_knowledge=False)
        h2.held, self.held = self.held, 0
        self.upgraded = True
        self.end()
        settings = get_all(h1.headers, b"http2-settings")[0]
        stream1 = H2Request.upgraded(h2.leg, request.method, request.target, h1.headers)
        try:
            h2.leg.start(transport, rest, upgrade=(settings, stream1))
        except h2_errors.ProtocolError:  # settings out of range (h2 checks their values)
            transport.abort()
            h2.end()
            return
        await h2.run()

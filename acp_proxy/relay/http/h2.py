"""A client connection that speaks HTTP/2: its streams relayed at once.

What belongs here: :class:`H2ClientConnection`, which runs one exchange
(:class:`acp_proxy.relay.http.exchange.Exchange`) per stream the client opens, for as
long as the connection lives: the connection's event stream, each session's event stream
and the POSTs between them go on side by side, as the client multiplexes them. The
connection began with the HTTP/2 preface (prior knowledge) or was upgraded from
HTTP/1.1 (:mod:`acp_proxy.relay.http.h1`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acp_proxy.relay.http.exchange import ClientConnection, Exchange
from acp_proxy.transports.http.common import ClientGone
from acp_proxy.transports.http.h2client import H2ClientLeg, H2Request
from acp_proxy.transports.tasks import Tasks

if TYPE_CHECKING:
    from acp_proxy.relay.http.front import Front

__all__ = ["H2ClientConnection"]


class H2ClientConnection(ClientConnection):
    def __init__(self, front: Front, *, prior_knowledge: bool) -> None:
        super().__init__(front, http2_upstream=front.http2_upstream(prior_knowledge))
        self.leg = H2ClientLeg(self._stream, front.config.timeouts)
        self.streams = Tasks()

    def _stream(self, request: H2Request) -> None:
        self.streams.run(self._exchange(request))

    async def _exchange(self, request: H2Request) -> None:
        try:
            await Exchange(self, request).run()
        except ClientGone:
            pass
        finally:
            request.close()

    async def run(self) -> None:
        """Until the client's connection ends (or we are stopping: then every stream is
        cut and recorded as such)."""
        try:
            await self.leg.closed.wait()
        finally:
            await self.streams.cancel()
            self.leg.close()
            self.end()

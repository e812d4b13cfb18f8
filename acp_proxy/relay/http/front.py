"""What the connections of a Streamable HTTP listener share.

What belongs here: :class:`Front`: the listener's settings and limits
(:class:`acp_proxy.relay.core.capacity.Capacity`), its captures
(:class:`acp_proxy.relay.http.connections.AcpConnections`), the upstream and which HTTP
each client connection speaks to it (``--upstream-http2``), the WebSocket upgrades, and
the client connections running, to end them when the listener stops.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Coroutine
from typing import Any

from acp_proxy.record.link import RecorderLink
from acp_proxy.relay import RefusalLog
from acp_proxy.relay.config import ServeConfig
from acp_proxy.relay.core.capacity import Capacity
from acp_proxy.relay.http.connections import AcpConnections
from acp_proxy.relay.http.upgrade import Upgrades
from acp_proxy.relay.http.upstreams import Upstreams
from acp_proxy.transports.tasks import Tasks

__all__ = ["Front"]


class Front:
    """What the listener's connections share: settings, limits, captures, upstream."""

    def __init__(self, config: ServeConfig, writer: RecorderLink) -> None:
        assert config.upstream is not None
        self.config = config
        self.keep = config.keep_secrets
        self.max_size = config.settings.max_size or (1 << 62)
        self.capacity = Capacity.for_messages(
            config.max_connections, config.max_in_flight, self.max_size
        )
        self.acp = AcpConnections(
            writer, upstream_url=config.upstream, keep_secrets=self.keep, label=config.label
        )
        up = urllib.parse.urlsplit(config.upstream)
        self.tls = up.scheme.lower() == "https"
        self.up_host = up.hostname or "localhost"
        self.up_port = up.port or (443 if self.tls else 80)
        self.up_netloc = up.netloc.rpartition("@")[2].encode("latin-1")
        self.upstream_mode = config.upstream_http2
        self.upgrades: Upgrades | None = None
        self.sessions = Tasks()  # the client connections
        self.refusals = RefusalLog()  # what it answered itself, on stderr

    def http2_upstream(self, prior_knowledge: bool) -> bool:
        """Whether a client connection's upstream leg speaks HTTP/2 (``--upstream-http2``:
        ``auto``: when the client spoke it with prior knowledge; never over TLS)."""
        if self.tls or self.upstream_mode == "never":
            return False
        return self.upstream_mode == "always" or prior_knowledge

    def upstreams(self, *, http2: bool) -> Upstreams:
        return Upstreams(
            self.up_host,
            self.up_port,
            self.up_netloc,
            tls=self.tls,
            http2=http2,
            timeout=self.config.settings.open_timeout,
        )

    def run(self, work: Coroutine[Any, Any, None]) -> None:
        """Run a client connection's work until it ends, or until :meth:`shutdown`."""
        self.sessions.run(work)

    async def shutdown(self) -> None:
        """End every connection: exchanges at once (a stream is recorded as cut by us),
        WebSocket sessions within :attr:`ServeConfig.settle` seconds."""
        await self.sessions.cancel()
        if self.upgrades is not None:
            await self.upgrades.close(self.config.settle)
        self.acp.close_all()
        self.refusals.close()

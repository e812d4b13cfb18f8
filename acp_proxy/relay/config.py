"""What a relay's listener is set to.

What belongs here: :class:`ServeConfig`, the settings of the WebSocket and Streamable HTTP
listeners: where they listen and relay to, the WebSocket settings of every leg, who is
admitted (:class:`~acp_proxy.relay.core.admission.Admission`), the limits of
:mod:`acp_proxy.relay.core.capacity` and the timeouts of
:class:`acp_proxy.transports.timeouts.Timeouts`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from acp_proxy.relay.core.admission import Admission
from acp_proxy.relay.core.capacity import DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_IN_FLIGHT
from acp_proxy.transports.timeouts import Timeouts
from acp_proxy.transports.websocket import WsSettings

__all__ = ["ServeConfig"]


@dataclasses.dataclass(frozen=True, slots=True)
class ServeConfig:
    host: str = "127.0.0.1"
    port: int = 8765
    upstream: str | None = None
    command: Sequence[str] | None = None
    settings: WsSettings = dataclasses.field(default_factory=WsSettings)
    admission: Admission = dataclasses.field(default_factory=Admission)
    keep_secrets: bool = False
    grace: float = 3.0
    label: str | None = None
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    upstream_http2: str = "auto"  # Streamable HTTP: auto, always or never (docs/http.md)
    timeouts: Timeouts = dataclasses.field(default_factory=Timeouts)

    @property
    def settle(self) -> float:
        """Seconds the connections get to end once the listener stops: a client the close
        timeout to take its close, an agent ``grace`` to exit, as long again after SIGTERM
        (half a second at least), then SIGKILL (docs/reliability.md, "Listeners")."""
        return self.settings.close_timeout + 2 * max(self.grace, 0.5) + 1.0

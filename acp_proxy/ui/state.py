"""What every request of the web inspector can reach, and the server that carries it.

What belongs here: :class:`UiConfig` (the options ``acp-proxy ui`` was started with),
:class:`State` (those, the folds shared by the views, the stop signal, the static files of
this package, the indexer) and :class:`UiServer`, the threaded standard-library HTTP
server that holds the state for its handlers.
"""

from __future__ import annotations

import socket
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any

from acp_proxy.record.link import stderr_warn
from acp_proxy.relay.core.admission import is_wildcard
from acp_proxy.transports.accept import BACKLOG, OUT_OF_RESOURCES, Backoff
from acp_proxy.transports.timeouts import Timeouts
from acp_proxy.ui import api
from acp_proxy.ui.indexer import Indexer

__all__ = ["State", "UiConfig", "UiServer"]

_STATIC_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}


def _static_files() -> dict[str, tuple[bytes, str]]:
    base = resources.files("acp_proxy.ui").joinpath("static")
    out = {}
    for entry in base.iterdir():
        suffix = Path(entry.name).suffix
        if entry.is_file() and suffix in _STATIC_TYPES:
            out[entry.name] = (entry.read_bytes(), _STATIC_TYPES[suffix])
    return out


@dataclass
class UiConfig:
    """The options of ``acp-proxy ui``."""

    db: Path
    host: str = "127.0.0.1"
    port: int = 8700
    token: str | None = None
    index: bool = True
    timeouts: Timeouts = field(default_factory=Timeouts)
    allow_hosts: frozenset[str] = frozenset()  # Host names answered besides this server's


@dataclass
class State:
    """What the handlers share, one per server."""

    config: UiConfig
    folds: api.Folds = field(default_factory=api.Folds)
    stop: threading.Event = field(default_factory=threading.Event)
    static: dict[str, tuple[bytes, str]] = field(default_factory=_static_files)
    indexer: Indexer | None = None


class UiServer(ThreadingHTTPServer):
    """The inspector's HTTP server: a thread per connection, the :class:`State` for all.
    Each connection is held to the listeners' timeouts (:mod:`acp_proxy.ui.bounded`);
    out of descriptors, ``accept`` backs off as the other listeners' does
    (:class:`acp_proxy.transports.accept.Backoff`), saying so on stderr now and then."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = BACKLOG  # connections the kernel keeps waiting (5 by default)

    def __init__(self, state: State, handler: type[BaseHTTPRequestHandler]) -> None:
        self.state = state
        self.timeouts = state.config.timeouts
        self.backoff = Backoff()
        host = state.config.host
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__((host.strip("[]"), state.config.port), handler)
        self.port = int(self.server_address[1])
        state.config.port = self.port

    @property
    def url(self) -> str:
        host = self.state.config.host
        if is_wildcard(host):
            host = "127.0.0.1"
        shown = f"[{host.strip('[]')}]" if ":" in host else host
        url = f"http://{shown}:{self.port}/"
        if self.state.config.token:
            url += "?token=" + urllib.parse.quote(self.state.config.token, safe="")
        return url

    def get_request(self) -> tuple[socket.socket, Any]:
        try:
            accepted = super().get_request()
        except OSError as e:  # (the base class then skips this turn)
            if e.errno not in OUT_OF_RESOURCES:
                raise
            delay, line = self.backoff.failed(time.monotonic(), e)
            if line is not None:
                stderr_warn(line)
            self.state.stop.wait(delay)  # not spinning on a socket that stays readable
            raise
        line = self.backoff.accepted(time.monotonic())
        if line is not None:
            stderr_warn(line)
        return accepted

    def shutdown(self) -> None:
        self.state.stop.set()
        super().shutdown()

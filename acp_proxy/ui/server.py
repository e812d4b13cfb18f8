"""The web inspector's HTTP server, put together and run.

What belongs here: :func:`make_server`, which checks the options and the database (one
clear error each), builds the :class:`~acp_proxy.ui.state.UiServer` with the routes of
:mod:`acp_proxy.ui.handler` and starts the search :class:`~acp_proxy.ui.indexer.Indexer`;
and :func:`serve_until_interrupted`. Who is answered is :mod:`acp_proxy.ui.admission`'s.
Views read through read-only connections (a writer is never blocked); the one write is
the search index.
"""

from __future__ import annotations

from collections.abc import Callable

from acp_proxy.errors import UsageError
from acp_proxy.relay.core.admission import check_listen_address, check_token
from acp_proxy.store.reader import Store
from acp_proxy.ui.handler import Handler
from acp_proxy.ui.indexer import Indexer
from acp_proxy.ui.state import State, UiConfig, UiServer

__all__ = ["make_server", "serve_until_interrupted"]


def make_server(config: UiConfig) -> UiServer:
    """A server ready to ``serve_forever`` (the database checked, the indexer started)."""
    check_token(config.token)
    check_listen_address(config.host.strip("[]"), config.token)
    Store(config.db, readonly=True).close()  # a missing or shared database: one clear error
    state = State(config)
    try:
        server = UiServer(state, Handler)
    except OSError as e:
        raise UsageError(f"cannot listen on {config.host}:{config.port}: {e.strerror}") from e
    if config.index:
        state.indexer = Indexer(config.db, state.stop)
        state.indexer.start()
    return server


def serve_until_interrupted(server: UiServer, on_ready: Callable[[str], None]) -> None:
    on_ready(server.url)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.state.stop.set()
        server.server_close()

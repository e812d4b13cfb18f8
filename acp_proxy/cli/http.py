"""The ``http`` command: a man in the middle for an agent's Streamable HTTP endpoint
(thin, no logic of its own). The listener is :mod:`acp_proxy.relay.http`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from acp_proxy.cli.common import CONTEXT, db_path
from acp_proxy.cli.listening import allow_origin_option, listener_options, timeouts_of, token_option
from acp_proxy.cli.options import db_option
from acp_proxy.cli.ws import listener_settings, serve_until_signal
from acp_proxy.errors import UsageError
from acp_proxy.record.link import RecorderLink
from acp_proxy.relay import tune_relay_process
from acp_proxy.relay.config import ServeConfig
from acp_proxy.relay.core.admission import (
    Admission,
    check_listen_address,
    check_token,
    hosts_for,
    listen_address,
)

__all__ = ["http"]


@click.command(context_settings=CONTEXT)
@db_option
@click.option(
    "--upstream",
    metavar="URL",
    help="The agent's endpoint, http:// or https:// (e.g. http://host:8000/acp).",
)
@click.option(
    "--upstream-http2",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="HTTP/2 (cleartext, prior knowledge) to an http:// upstream: auto: for the clients "
    "that speak it with prior knowledge, HTTP/1.1 for the others; always; never. An https:// "
    "upstream is spoken to in HTTP/1.1.",
)
@token_option
@allow_origin_option("requests")
@listener_options("a larger request body: HTTP 413")
def http(
    db: Path | None,
    upstream: str | None,
    upstream_http2: str,
    token: str | None,
    allow_origins: tuple[str, ...],
    listen: str,
    max_size: int,
    max_queue: int,
    max_connections: int,
    max_in_flight: int,
    keep_secrets: bool,
    label: str | None,
    allow_hosts: tuple[str, ...],
    head_timeout: float,
    body_timeout: float,
    idle_timeout: float,
    close_timeout: float,
) -> None:
    """Relay an agent's Streamable HTTP endpoint, recording every message.

    \b
    Example:
        acp-proxy http --listen 127.0.0.1:8765 --upstream http://agent.example:8000/acp
    Then point the client at http://127.0.0.1:8765/acp.

    POSTs, event-stream GETs and DELETEs are relayed as they come (headers such as
    Acp-Connection-Id, Acp-Session-Id and cookies included); each ACP connection is one
    capture. Clients may speak HTTP/1.1 or HTTP/2 (h2c: with prior knowledge, or by
    Upgrade: h2c). WebSocket upgrades on the same port go to the agent's WebSocket
    endpoint, as with acp-proxy ws.
    """
    if upstream is None:
        raise UsageError("give --upstream URL, the agent's endpoint (e.g. http://host:8000/acp)")
    if not upstream.lower().startswith(("http://", "https://")):
        raise UsageError(f"--upstream wants an http:// or https:// URL, not {upstream!r}")
    if upstream_http2 == "always" and upstream.lower().startswith("https://"):
        raise UsageError("--upstream-http2 always needs an http:// upstream (h2c)")
    host, port = listen_address(listen)
    check_token(token)
    settings = listener_settings(
        max_size, max_queue, None, max_connections, max_in_flight, close_timeout
    )
    check_listen_address(host, token)
    config = ServeConfig(
        host=host,
        port=port,
        upstream=upstream,
        settings=settings,
        admission=Admission(token, frozenset(allow_origins), hosts_for(host, allow_hosts)),
        keep_secrets=keep_secrets,
        label=label,
        max_connections=max_connections,
        max_in_flight=max_in_flight,
        upstream_http2=upstream_http2,
        timeouts=timeouts_of(head_timeout, body_timeout, idle_timeout),
    )
    tune_relay_process()
    from acp_proxy.relay.http import serve

    # like record and ws: a database that cannot be used never stops the relaying
    writer = RecorderLink(db_path(db, relaying=True))
    try:
        asyncio.run(serve_until_signal(config, writer, serve))
    except OSError as e:
        raise UsageError(f"cannot listen on {listen}: {e.strerror or e}") from e
    finally:
        writer.close()

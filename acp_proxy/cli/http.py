"""The ``http`` command: a man in the middle for an agent's Streamable HTTP endpoint
(thin, no logic of its own). The listener is :mod:`acp_proxy.relay.http`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from acp_proxy.cli.common import (
    CONTEXT,
    allow_origin_option,
    db_option,
    db_path,
    handle_errors,
    token_option,
)
from acp_proxy.cli.ws import _parse_listen, _settings, serve_until_signal
from acp_proxy.errors import UsageError
from acp_proxy.record.link import RecorderLink
from acp_proxy.relay import tune_relay_process
from acp_proxy.relay.admission import Admission, ServeConfig, check_listen_address, check_token
from acp_proxy.relay.capacity import DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_IN_FLIGHT

__all__ = ["http"]

_MIB = 1024 * 1024


@click.command(context_settings=CONTEXT)
@db_option
@click.option(
    "--listen",
    default="127.0.0.1:8765",
    show_default=True,
    metavar="HOST:PORT",
    help="Where clients connect. Anything but loopback requires --token. Port 0 picks one.",
)
@click.option(
    "--upstream",
    metavar="URL",
    help="The agent's endpoint, http:// or https:// (e.g. http://host:8000/acp).",
)
@token_option
@allow_origin_option("requests")
@click.option(
    "--max-size",
    type=int,
    default=64 * _MIB,
    show_default=True,
    help="Largest request body or message, in bytes (a larger request body: HTTP 413).",
)
@click.option(
    "--max-queue",
    type=int,
    default=16,
    show_default=True,
    help="Frames buffered per leg of a WebSocket connection before reading stops.",
)
@click.option(
    "--max-connections",
    type=int,
    default=DEFAULT_MAX_CONNECTIONS,
    show_default=True,
    help="Client connections (HTTP and WebSocket) relayed at once; more get HTTP 503.",
)
@click.option(
    "--max-in-flight",
    type=int,
    default=DEFAULT_MAX_IN_FLIGHT,
    show_default=True,
    metavar="BYTES",
    help="Memory budget: each connection commits 2 × --max-size; one that would exceed "
    "the budget is refused with HTTP 503.",
)
@click.option(
    "--keep-secrets",
    is_flag=True,
    help="Store every header and query parameter value as sent (by default only values of "
    "headers known to hold no secret are stored).",
)
@click.option("--label", help="A note stored with each capture.")
@handle_errors
def http(
    db: Path | None,
    listen: str,
    upstream: str | None,
    token: str | None,
    allow_origins: tuple[str, ...],
    max_size: int,
    max_queue: int,
    max_connections: int,
    max_in_flight: int,
    keep_secrets: bool,
    label: str | None,
) -> None:
    """Relay an agent's Streamable HTTP endpoint, recording every message.

    \b
    Example:
        acp-proxy http --listen 127.0.0.1:8765 --upstream http://agent.example:8000/acp
    Then point the client at http://127.0.0.1:8765/acp.

    POSTs, event-stream GETs and DELETEs are relayed as they come (headers such as
    Acp-Connection-Id, Acp-Session-Id and cookies included); each ACP connection is one
    capture. WebSocket upgrades on the same port go to the agent's WebSocket endpoint, as
    with acp-proxy ws.
    """
    if upstream is None:
        raise UsageError("give --upstream URL, the agent's endpoint (e.g. http://host:8000/acp)")
    if not upstream.lower().startswith(("http://", "https://")):
        raise UsageError(f"--upstream wants an http:// or https:// URL, not {upstream!r}")
    host, port = _parse_listen(listen)
    check_token(token)
    settings = _settings(max_size, max_queue, None)
    if max_connections < 1:
        raise UsageError("--max-connections must be at least 1")
    if max_in_flight < 2 * max_size:
        raise UsageError(
            f"--max-in-flight must hold one connection: at least 2 × --max-size ({2 * max_size})"
        )
    check_listen_address(host, token)
    config = ServeConfig(
        host=host,
        port=port,
        upstream=upstream,
        settings=settings,
        admission=Admission(token, frozenset(allow_origins)),
        keep_secrets=keep_secrets,
        label=label,
        max_connections=max_connections,
        max_in_flight=max_in_flight,
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

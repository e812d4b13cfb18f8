"""WebSocket commands: ``ws`` and ``record --upstream`` (thin, no logic of their own).

``ws`` listens for WebSocket clients and relays each connection either to a remote
WebSocket agent (``--upstream URL``: man in the middle) or to a fresh local stdio agent
process (``-- CMD …``). ``record --upstream URL`` makes our stdin/stdout a stdio client of
a remote WebSocket agent. The sessions are in :mod:`acp_proxy.relay.listener` and
:mod:`acp_proxy.relay.bridge`, the relay core in :mod:`acp_proxy.relay.pump`.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from acp_proxy.cli.common import CONTEXT, agent_command, db_path, echo
from acp_proxy.cli.listening import allow_origin_option, listener_options, timeouts_of, token_option
from acp_proxy.cli.options import db_option, grace_option
from acp_proxy.cli.otel_live import live_recorder_env, otel_options
from acp_proxy.errors import UsageError
from acp_proxy.record.link import RecorderLink
from acp_proxy.relay import tune_relay_process
from acp_proxy.relay.bridge import bridge_stdio_client
from acp_proxy.relay.config import ServeConfig
from acp_proxy.relay.core.admission import (
    Admission,
    check_listen_address,
    check_token,
    hosts_for,
    listen_address,
)
from acp_proxy.relay.listener import serve
from acp_proxy.transports.signals import on_stop_signals
from acp_proxy.transports.websocket import WsSettings

__all__ = [
    "listener_settings",
    "record_upstream",
    "serve_until_signal",
    "ws",
]


def listener_settings(
    max_size: int,
    max_queue: int,
    ping_interval: float | None,
    max_connections: int,
    max_in_flight: int,
    close_timeout: float = WsSettings().close_timeout,
) -> WsSettings:
    """The settings of a relaying listener, its options checked."""
    if max_size < 1:
        raise UsageError("--max-size must be a positive number of bytes")
    if max_connections < 1:
        raise UsageError("--max-connections must be at least 1")
    if max_in_flight < 2 * max_size:
        raise UsageError(
            f"--max-in-flight must hold one connection: at least 2 × --max-size ({2 * max_size})"
        )
    if max_queue < 1:
        raise UsageError("--max-queue must be at least 1")
    if ping_interval is not None and ping_interval <= 0:
        raise UsageError("--ping-interval must be a positive number of seconds")
    return WsSettings(
        max_size=max_size,
        max_queue=max_queue,
        ping_interval=ping_interval,
        ping_timeout=ping_interval,
        close_timeout=close_timeout,
    )


def parse_headers(values: Sequence[str]) -> list[tuple[str, str]]:
    """``Name: value`` strings as header pairs; raises UsageError on anything else."""
    pairs = []
    for v in values:
        name, sep, value = v.partition(":")
        if not sep or not name.strip() or any(c in name for c in " \t\r\n"):
            raise UsageError(f"--header wants 'Name: value', not {v!r}")
        if any(c in value for c in "\r\n"):
            raise UsageError(f"--header value of {name} contains a line break")
        pairs.append((name.strip(), value.strip()))
    return pairs


def record_upstream(
    db: Path,
    url: str,
    *,
    label: str | None,
    headers: Sequence[str] = (),
    keep_secrets: bool = False,
    recorder_env: dict[str, str] | None = None,
) -> int:
    """Bridge our stdio to a remote WebSocket agent, recording both legs; the exit status
    (0, or 128+N after signal N; an upstream that fails raises
    :class:`~acp_proxy.errors.PeerError`)."""
    if not url.startswith(("ws://", "wss://")):
        raise UsageError(f"--upstream wants a ws:// or wss:// URL, not {url!r}")
    pairs = parse_headers(headers)
    tune_relay_process()
    writer = RecorderLink(db, recorder_env=recorder_env)
    try:
        return asyncio.run(
            bridge_stdio_client(url, writer, label=label, headers=pairs, keep_secrets=keep_secrets)
        )
    except KeyboardInterrupt:  # before the connection was up (later, SIGINT is handled)
        return 128 + signal.SIGINT
    finally:
        writer.close()


@click.command(
    context_settings={**CONTEXT, "ignore_unknown_options": True, "allow_interspersed_args": False}
)
@db_option
@click.option("--upstream", metavar="URL", help="Relay each connection to this ws:// agent.")
@token_option
@allow_origin_option("connections")
@listener_options("larger: closed with 1009")
@click.option(
    "--ping-interval",
    type=float,
    default=None,
    help="Send keepalive pings on both legs every N seconds (default: never).",
)
@click.option("--record-secrets", is_flag=True, hidden=True)  # the earlier name
@grace_option("Seconds an agent gets after its client left before it is terminated.")
@otel_options
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def ws(
    db: Path | None,
    listen: str,
    upstream: str | None,
    token: str | None,
    allow_origins: tuple[str, ...],
    max_size: int,
    max_queue: int,
    max_connections: int,
    max_in_flight: int,
    ping_interval: float | None,
    keep_secrets: bool,
    record_secrets: bool,
    label: str | None,
    grace: float,
    otlp_endpoint: str | None,
    otel_content: bool,
    command: tuple[str, ...],
    allow_hosts: tuple[str, ...],
    head_timeout: float,
    body_timeout: float,
    idle_timeout: float,
    close_timeout: float,
) -> None:
    """Accept WebSocket clients and relay each one, recording every message.

    \b
    Example, man in the middle (one upstream connection and one capture per client):
        acp-proxy ws --listen 127.0.0.1:8765 --upstream ws://agent.example:8000/acp
    Example, a local stdio agent (a fresh agent process per connection):
        acp-proxy ws --listen 127.0.0.1:8765 -- my-agent --flag
    Then point the client at ws://127.0.0.1:8765/acp.

    Headers of the upgrade (Authorization, Cookie, Sec-WebSocket-Protocol, ...), the path and
    the query are relayed upstream; the upstream's subprotocol, Acp-Connection-Id and
    Set-Cookie come back. Browser origins are refused unless allowed with --allow-origin.
    """
    argv = agent_command(command)
    if (upstream is None) == (not argv):
        raise UsageError(
            "give either --upstream URL or an agent command after --, not both or neither"
        )
    if upstream is not None and not upstream.startswith(("ws://", "wss://")):
        raise UsageError(f"--upstream wants a ws:// or wss:// URL, not {upstream!r}")
    host, port = listen_address(listen)
    if argv:
        from acp_proxy.transports.stdio import check_command

        check_command(argv)
    check_token(token)
    settings = listener_settings(
        max_size, max_queue, ping_interval, max_connections, max_in_flight, close_timeout
    )
    check_listen_address(host, token)
    config = ServeConfig(
        host=host,
        port=port,
        upstream=upstream,
        command=argv or None,
        settings=settings,
        admission=Admission(token, frozenset(allow_origins), hosts_for(host, allow_hosts)),
        keep_secrets=keep_secrets or record_secrets,
        grace=grace,
        label=label,
        max_connections=max_connections,
        max_in_flight=max_in_flight,
        timeouts=timeouts_of(head_timeout, body_timeout, idle_timeout),
    )
    recorder_env = live_recorder_env(otlp_endpoint, otel_content)
    tune_relay_process()
    writer = RecorderLink(db_path(db, relaying=True), recorder_env=recorder_env)
    try:
        asyncio.run(serve_until_signal(config, writer))
    except OSError as e:
        raise UsageError(f"cannot listen on {listen}: {e.strerror or e}") from e
    finally:
        writer.close()


async def serve_until_signal(
    config: ServeConfig, writer: RecorderLink, serve_fn: Any = None
) -> None:
    """Run a listener (``serve_fn``: the WebSocket one by default, or the HTTP one) until
    a stop signal (SIGINT, SIGTERM, SIGHUP), saying where it listens once it does."""
    serve_fn = serve if serve_fn is None else serve_fn
    stop = asyncio.Event()
    target = config.upstream or " ".join(config.command or ())

    def ready(url: str) -> None:
        echo(f"acp-proxy: listening on {url} → {target} (pid {os.getpid()})", err=True)

    with on_stop_signals(lambda _signum: stop.set()):
        await serve_fn(config, writer, stop, ready=ready)

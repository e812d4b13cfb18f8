"""Our stdin/stdout as a stdio client of a remote WebSocket agent.

What belongs here: :func:`bridge_stdio_client` — one capture of an editor speaking stdio to
us and a WebSocket agent at the far end: the connection to it, its handshake as an event,
the signals that stop us, and how it ended: an exit status, or the upstream's fault
(:class:`~acp_proxy.errors.UpstreamError` when it cannot be reached or refuses us,
:class:`~acp_proxy.errors.PeerError` when it closes abnormally).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Sequence

from websockets.exceptions import InvalidStatus, WebSocketException

from acp_proxy import events
from acp_proxy.errors import PeerError, UpstreamError
from acp_proxy.record.link import CaptureMeta, RecorderLink, Tap
from acp_proxy.relay.pump import relay
from acp_proxy.transports.headers import redact_headers, redact_subprotocol, redact_url
from acp_proxy.transports.lines import FdChannel, LineEndpoint
from acp_proxy.transports.signals import on_stop_signals
from acp_proxy.transports.websocket import (
    DROPPED,
    LegEnd,
    RelayClientConnection,
    WsEndpoint,
    WsSettings,
    open_client,
)

__all__ = ["bridge_stdio_client"]

_OK_CLOSE = (1000, 1001, 1005)


async def bridge_stdio_client(
    url: str,
    writer: RecorderLink,
    settings: WsSettings | None = None,
    *,
    label: str | None = None,
    keep_secrets: bool = False,
    headers: Sequence[tuple[str, str]] = (),
    stdin_fd: int = 0,
    stdout_fd: int = 1,
) -> int:
    """Relay our stdin/stdout (a stdio ACP client, e.g. an editor) to the agent at ``url``,
    sending ``headers`` with the upgrade request (``Authorization``, say).

    Returns the exit status: 0 when the connection ended normally (our stdin closed, or the
    upstream closed with 1000/1001/no code), 128+N when we were stopped by signal N. Raises
    :class:`~acp_proxy.errors.UpstreamError` when the upstream could not be reached or
    refused us, :class:`~acp_proxy.errors.PeerError` when it closed abnormally (either is
    exit status 4, also stored as the capture's).
    """
    settings = settings or WsSettings()
    meta = CaptureMeta(
        transport="stdio-ws", upstream_url=redact_url(url, keep_secrets=keep_secrets), label=label
    )
    tap = writer.open_capture(meta)
    shown = redact_url(url, keep_secrets=False)
    started = time.monotonic_ns()
    conn = await _connect(url, settings, headers, tap, shown, keep_secrets)
    _handshake_event(tap, conn, url, keep_secrets, started)
    client = LineEndpoint(FdChannel(stdin_fd, stdout_fd), "client", settings.max_size or 1 << 62)
    stopped_by: list[int] = []

    def on_signal(signum: int) -> None:
        stopped_by.append(signum)
        tap.event(events.Signal(signal=signal.Signals(signum).name))
        client.interrupt(LegEnd(1001, "", "proxy", "shutdown", {"signal": signum}))

    code = PeerError.exit_code
    try:
        with on_stop_signals(on_signal):
            endings = await relay(client, WsEndpoint(conn, "upstream"), tap)
            code = _exit_code(endings.get("upstream"), stopped_by, shown)
    finally:
        tap.close(exit_code=code)
    return code


async def _connect(
    url: str,
    settings: WsSettings,
    headers: Sequence[tuple[str, str]],
    tap: Tap,
    shown: str,
    keep_secrets: bool,
) -> RelayClientConnection:
    """The connection to the upstream; :class:`~acp_proxy.errors.UpstreamError` (recorded,
    the capture closed with its exit status) when it refused us or could not be reached."""
    try:
        return await open_client(url, settings, headers=headers)
    except InvalidStatus as e:
        r = e.response
        tap.event(
            events.UpstreamRefused(
                status=r.status_code,
                headers=redact_headers(r.headers.raw_items(), keep_secrets=keep_secrets),
            )
        )
        tap.close(exit_code=UpstreamError.exit_code)
        raise UpstreamError(
            f"upstream {shown} refused the connection: HTTP {r.status_code}"
        ) from None
    except (OSError, TimeoutError, WebSocketException) as e:
        reason = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
        tap.event(events.UpstreamFailed(error=reason))
        tap.close(exit_code=UpstreamError.exit_code)
        raise UpstreamError(f"upstream {shown} unreachable ({reason})") from e


def _handshake_event(
    tap: Tap, conn: RelayClientConnection, url: str, keep_secrets: bool, started: int
) -> None:
    """The ``handshake`` event: what we sent the upstream and what it answered."""
    assert conn.response is not None
    upstream = {
        "url": redact_url(url, keep_secrets=keep_secrets),
        "headers": redact_headers(conn.request.headers.raw_items(), keep_secrets=keep_secrets)
        if conn.request
        else [],
        "status": conn.response.status_code,
        "response_headers": redact_headers(
            conn.response.headers.raw_items(), keep_secrets=keep_secrets
        ),
    }
    tap.event(
        events.Handshake(
            upstream=upstream,
            subprotocol=redact_subprotocol(conn.subprotocol, keep_secrets=keep_secrets),
            handshake_ms=round((time.monotonic_ns() - started) / 1e6, 3),
        )
    )


def _exit_code(up: LegEnd | None, stopped_by: list[int], shown: str) -> int:
    """How the bridge ended, from the upstream's ending: its exit status, or
    :class:`~acp_proxy.errors.PeerError` when the upstream ended it abnormally."""
    if stopped_by:
        return 128 + stopped_by[0]
    if up is None or up.by == "proxy" or up.code in _OK_CLOSE:
        return 0
    if up.code == DROPPED:
        raise PeerError(f"upstream {shown} dropped the connection")
    raise PeerError(f"upstream {shown} closed the connection: {up.code} {up.reason}".rstrip())

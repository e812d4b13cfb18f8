"""The options the listeners share (``ws``, ``http``, ``ui``, ``replay agent --listen``).

What belongs here: ``--token``, ``--allow-origin``, ``--allow-host``, the timeouts
(``--head-timeout``, ``--body-timeout``, ``--idle-timeout``: every listener takes them)
and the options of the relaying listeners (where they listen, their limits, what they
store), declared once so that every listener takes them alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from acp_proxy.cli.common import Int, Seconds
from acp_proxy.transports.timeouts import Timeouts
from acp_proxy.transports.websocket import WsSettings

__all__ = [
    "allow_host_option",
    "allow_origin_option",
    "listener_options",
    "timeout_options",
    "timeouts_of",
    "token_option",
]

F = TypeVar("F", bound=Callable[..., Any])

_MIB = 1024 * 1024

token_option = click.option(
    "--token",
    envvar="ACP_PROXY_TOKEN",
    help="Clients must send Authorization: Bearer TOKEN or ?token=TOKEN ($ACP_PROXY_TOKEN).",
)


def allow_origin_option(what: str) -> Callable[[F], F]:
    """``--allow-origin`` (repeatable); ``what`` says what a browser sends from it."""
    return click.option(
        "--allow-origin",
        "allow_origins",
        multiple=True,
        metavar="ORIGIN",
        help=f"Accept browser {what} from this Origin (repeatable); others are refused.",
    )


allow_host_option = click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="Also answer requests whose Host is NAME (repeatable). A loopback listener answers "
    "only loopback names and addresses, so that no web page can reach it by rebinding its "
    "own DNS name to 127.0.0.1.",
)


def timeout_options(fn: F) -> F:
    """``--head-timeout``, ``--body-timeout``, ``--idle-timeout``
    (:class:`acp_proxy.transports.timeouts.Timeouts`; :func:`timeouts_of` makes one)."""
    t = Timeouts()
    options = [
        click.option("--head-timeout", type=Seconds(), default=t.head, show_default=True,
                     metavar="SECONDS", help="A request head (or a WebSocket upgrade) must "
                     "come whole within this of the connection's opening, or of its first "
                     "byte; else 408, and the connection is closed."),
        click.option("--body-timeout", type=Seconds(), default=t.body, show_default=True,
                     metavar="SECONDS", help="A request body must come whole within this of "
                     "its head; else 408, and the connection is closed."),
        click.option("--idle-timeout", type=Seconds(), default=t.idle, show_default=True,
                     metavar="SECONDS", help="A connection with no request in progress, or "
                     "whose client reads nothing of what it is sent, is closed after this."),
    ]  # fmt: skip
    for option in reversed(options):
        fn = option(fn)
    return fn


def timeouts_of(head_timeout: float, body_timeout: float, idle_timeout: float) -> Timeouts:
    return Timeouts(head=head_timeout, body=body_timeout, idle=idle_timeout)


def listener_options(too_big: str) -> Callable[[F], F]:
    """The options of the relaying listeners (``ws``, ``http``): where they listen, their
    limits and timeouts, the ``Host`` names they answer, what they store; ``too_big`` says
    what a message over ``--max-size`` gets."""
    from acp_proxy.relay.core.capacity import DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_IN_FLIGHT

    options = [
        click.option("--listen", default="127.0.0.1:8765", show_default=True,
                     metavar="HOST:PORT", help="Where clients connect. Anything but loopback "
                     "requires --token. Port 0 picks one."),
        click.option("--max-size", type=Int(), default=64 * _MIB, show_default=True,
                     help=f"Largest message relayed, in bytes ({too_big})."),
        click.option("--max-queue", type=Int(), default=16, show_default=True,
                     help="Frames buffered per leg of a WebSocket connection before reading "
                     "stops (backpressure)."),
        click.option("--max-connections", type=Int(), default=DEFAULT_MAX_CONNECTIONS,
                     show_default=True, help="Connections relayed at once (each one an "
                     "upstream connection or an agent process; an HTTP/2 connection counts "
                     "once more for each stream beyond the first at once); more are refused "
                     "with HTTP 503."),
        click.option("--max-in-flight", type=Int(), default=DEFAULT_MAX_IN_FLIGHT,
                     show_default=True, metavar="BYTES", help="Memory budget for messages in "
                     "flight: each connection commits 2 × --max-size, and one that would "
                     "exceed the budget is refused with HTTP 503."),
        click.option("--keep-secrets", is_flag=True, help="Store every header and query "
                     "parameter value as sent (by default only values of headers known to hold "
                     "no secret, such as Host, User-Agent or Origin, are stored)."),
        click.option("--label", help="A note stored with each capture."),
        click.option("--close-timeout", type=Seconds(), default=WsSettings().close_timeout,
                     show_default=True, metavar="SECONDS", help="How long a WebSocket "
                     "closing (ours, or at a stop signal) waits for the other side's close "
                     "frame before the connection is dropped."),
        allow_host_option,
    ]  # fmt: skip

    def decorate(fn: F) -> F:
        fn = timeout_options(fn)
        for option in reversed(options):
            fn = option(fn)
        return fn

    return decorate

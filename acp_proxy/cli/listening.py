"""The options every relaying listener shares (``ws``, ``http``).

What belongs here: ``--token``, ``--allow-origin`` and the listener options (where it
listens, its limits, what it stores), declared once so that ``acp-proxy ws`` and
``acp-proxy http`` take them alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from acp_proxy.cli.common import Int

__all__ = ["allow_origin_option", "listener_options", "token_option"]

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


def listener_options(too_big: str) -> Callable[[F], F]:
    """The options of the relaying listeners (``ws``, ``http``): where they listen, their
    limits, what they store; ``too_big`` says what a message over ``--max-size`` gets."""
    from acp_proxy.relay.capacity import DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_IN_FLIGHT

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
    ]  # fmt: skip

    def decorate(fn: F) -> F:
        for option in reversed(options):
            fn = option(fn)
        return fn

    return decorate

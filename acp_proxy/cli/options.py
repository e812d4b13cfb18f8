"""The options the commands share: one definition each.

What belongs here: ``--db`` (and a group's ``--db`` for its commands), ``--json``,
``--grep`` with ``-i``, the frame filters, and ``--color`` with ``--no-pager``. How they
are used (the database path, colour, the pager) is :mod:`acp_proxy.cli.common`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from acp_proxy.cli.common import GROUP_DB_KEY, Seconds, set_colour

__all__ = [
    "db_option",
    "filter_options",
    "grace_option",
    "grep_options",
    "group_db_option",
    "json_option",
    "output_options",
]

F = TypeVar("F", bound=Callable[..., Any])


def output_options(fn: F) -> F:
    """--color and --no-pager, for the commands that print text for a person."""

    def colour(ctx: click.Context, param: click.Parameter, value: str) -> str:
        set_colour(value)
        return value

    fn = click.option(
        "--no-pager", "no_pager", is_flag=True, help="Never page (see $ACP_PROXY_PAGER)."
    )(fn)
    return click.option(
        "--color",
        "color",
        type=click.Choice(["auto", "always", "never"]),
        default="auto",
        show_default=True,
        callback=colour,
        expose_value=False,
        is_eager=True,
        help="Colour directions, errors, anomalies and denials; auto: when stdout is a "
        "terminal and $NO_COLOR is unset.",
    )(fn)


def grace_option(help: str) -> Callable[[F], F]:
    """``--grace``: the seconds an agent gets to exit by itself once its client is gone
    (zero or more; :class:`~acp_proxy.transports.process.AgentProcess`)."""

    def decorate(fn: F) -> F:
        option = click.option("--grace", type=Seconds(zero=True), default=3.0,
                              show_default=True, help=help)  # fmt: skip
        return option(fn)

    return decorate


def db_option(fn: F) -> F:
    return click.option(
        "--db",
        "db",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Recordings database (default: $ACP_PROXY_DB, else "
        "$XDG_STATE_HOME/acp-proxy/recordings.sqlite).",
    )(fn)


def group_db_option(fn: F) -> F:
    """``--db`` on a group (``otel``, ``replay``): the database of its commands, unless a
    command is given its own."""

    def remember(ctx: click.Context, param: click.Parameter, value: Path | None) -> None:
        if value is not None:
            ctx.meta[GROUP_DB_KEY] = value

    return click.option(
        "--db",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        expose_value=False,
        callback=remember,
        help="Recordings database of the commands below (each also takes --db).",
    )(fn)


def json_option(fn: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")(fn)


def grep_options(fn: F) -> F:
    """--grep PATTERN and -i/--ignore-case, shared by show and tail."""
    fn = click.option(
        "-i",
        "--ignore-case",
        is_flag=True,
        help="--grep ignores case (without it: only when the pattern has no capital letter).",
    )(fn)
    return click.option(
        "--grep",
        "grep",
        metavar="PATTERN",
        help="Only frames (and stderr lines, events) whose text matches this regular "
        "expression; case-insensitive unless it has a capital letter.",
    )(fn)


def filter_options(fn: F) -> F:
    """--method/--kind/--session/--direction/--update, shared by the frame listings."""
    for opt in reversed(
        [
            click.option(
                "--method", "method", metavar="GLOB", help="Only methods matching, e.g. 'fs/*'."
            ),
            click.option(
                "--kind",
                "kind",
                type=click.Choice(
                    ["request", "notification", "response", "error", "batch", "invalid"]
                ),
                help="Only frames of this kind.",
            ),
            click.option("--session", "session", metavar="ID", help="Only this ACP session."),
            click.option(
                "--direction",
                "direction",
                type=click.Choice(["c2a", "a2c"]),
                help="c2a: client→agent; a2c: agent→client.",
            ),
            click.option(
                "--update",
                "update",
                metavar="GLOB",
                help="Only session/update kinds matching, e.g. 'tool_call*'.",
            ),
            click.option("--anomalous", is_flag=True, help="Only frames with anomalies."),
            click.option(
                "--filter",
                "filter",
                metavar="EXPR",
                help="Only frames passing this filter expression, e.g. "
                "'method:session/* and not dir:a2c' (docs/ui.md, \"Filter expressions\").",
            ),
        ]
    ):
        fn = opt(fn)
    return fn

"""What every command shares: options, the one error path, opening the database.

What belongs here: the click option decorators used by more than one command, how an error
reaches the user (:func:`handle_errors`: one line on stderr, the error's exit code), the
splitting of a command line at ``--``, and printing JSON. No command is defined here.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
import orjson

from acp_proxy.errors import ProxyError, UsageError
from acp_proxy.store.reader import Store, default_db_path
from acp_proxy.text.safe import json_visible_bytes, visible

__all__ = [
    "CONTEXT",
    "DashDashCommand",
    "after_dash_dash",
    "db_option",
    "db_path",
    "dump_json",
    "echo",
    "fail",
    "filter_options",
    "handle_errors",
    "json_option",
    "open_store",
]

F = TypeVar("F", bound=Callable[..., Any])
CONTEXT: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def echo(text: str = "", *, err: bool = False, nl: bool = True) -> None:
    """Print text for a person: the one way a command's text reaches the terminal. Control
    characters from a recording are shown as escapes, never acted on
    (:func:`~acp_proxy.text.safe.visible`)."""
    click.echo(visible(text), err=err, nl=nl)


def fail(message: str, code: int) -> None:
    """Print one error line and exit with ``code``."""
    echo(f"acp-proxy: error: {message}", err=True)
    sys.exit(code)


def handle_errors(fn: F) -> F:
    """Turn every :class:`ProxyError` into one line on stderr and its exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ProxyError as e:
            fail(str(e), e.exit_code)
        except BrokenPipeError:  # `acp-proxy show | head`
            os._exit(0)
        return None

    return wrapper  # type: ignore[return-value]


class DashDashCommand(click.Command):
    """A command whose words after the first ``--`` are kept apart, untouched by click
    (:func:`after_dash_dash`), so an agent command's own options are never parsed as ours
    and never mistaken for an argument such as a capture."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            i = args.index("--")
            args, ctx.meta["after_dash_dash"] = args[:i], args[i + 1 :]
        else:
            ctx.meta["after_dash_dash"] = None
        return super().parse_args(ctx, args)


def after_dash_dash() -> list[str] | None:
    """The words after ``--`` of the running :class:`DashDashCommand` (None: no ``--``)."""
    words = click.get_current_context().meta.get("after_dash_dash")
    return None if words is None else list(words)


def db_option(fn: F) -> F:
    return click.option(
        "--db",
        "db",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Recordings database (default: $ACP_PROXY_DB, else "
        "$XDG_STATE_HOME/acp-proxy/recordings.sqlite).",
    )(fn)


def json_option(fn: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")(fn)


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
        ]
    ):
        fn = opt(fn)
    return fn


def db_path(db: Path | None) -> Path:
    return db if db is not None else default_db_path()


def open_store(db: Path | None) -> Store:
    return Store(db_path(db))


def dump_json(v: Any, *, indent: bool = True) -> None:
    """Print ``v`` as JSON (C1 controls escaped too: :func:`~acp_proxy.text.safe.json_visible`)."""
    option = orjson.OPT_INDENT_2 if indent else 0
    click.echo(json_visible_bytes(orjson.dumps(v, option=option, default=str)))


def check_at(at: int | None) -> None:
    if at is not None and at < 0:
        raise UsageError("--at takes a frame number (seq) of zero or more")

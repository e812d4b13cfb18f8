"""What every command shares: the output path, parameter types, opening the database.

What belongs here: how text reaches the user (:func:`echo`, through a pager with
:func:`paged`, progress on stderr), the parameter types and command classes of more than
one command, the splitting of a command line at ``--``, the ``--db`` path, and printing
JSON. No command is defined here, and nothing here exits: a command's errors and status
become an exit status in :mod:`acp_proxy.cli.exits`.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar

import click

from acp_proxy.errors import UsageError
from acp_proxy.settings import number
from acp_proxy.store.numbers import INT64_MAX, INT64_MIN, parse_int
from acp_proxy.store.reader import Store, default_db_path
from acp_proxy.text.safe import json_bytes, visible
from acp_proxy.text.style import Styled, paint

__all__ = [
    "CONTEXT",
    "GROUP_DB_KEY",
    "CaptureCommand",
    "DashDashCommand",
    "Int",
    "Progress",
    "Seconds",
    "after_dash_dash",
    "agent_command",
    "db_path",
    "dump_json",
    "echo",
    "expand_path",
    "open_store",
    "paged",
    "set_colour",
]

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")
CONTEXT: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class _Output:
    """Where stdout text goes (the terminal, or a pager) and whether it is coloured."""

    colour = False
    stream: IO[str] | None = None  # a pager's stdin, while paging
    progress: Progress | None = None  # the progress line on stderr, while drawn


_OUT = _Output()


def echo(text: str | Styled = "", *, err: bool = False, nl: bool = True) -> None:
    """Print text for a person: the one way a command's text reaches the terminal. Control
    characters from a recording are shown as escapes, never acted on
    (:func:`~acp_proxy.text.safe.visible`); a :class:`~acp_proxy.text.style.Styled` line is
    coloured by parts when colour is on (:func:`~acp_proxy.text.style.paint`)."""
    if err:
        if _OUT.progress is not None:
            _OUT.progress.clear()
        click.echo(paint(text, False), err=True, nl=nl)
        return
    click.echo(paint(text, _OUT.colour), nl=nl, file=_OUT.stream, color=_OUT.colour or None)


def echo_lines(lines: Iterable[str | Styled], batch: int = 512) -> None:
    """Many lines on stdout, each as :func:`echo` prints it, written ``batch`` lines at a
    time: ``click.echo`` writes and flushes once per call, and a view of a large capture is
    hundreds of thousands of lines (a system call each cost more than making them)."""
    colour = _OUT.colour
    held: list[str] = []
    for line in lines:
        held.append(paint(line, colour))
        if len(held) >= batch:
            click.echo("\n".join(held), file=_OUT.stream, color=colour or None)
            held.clear()
    if held:
        click.echo("\n".join(held), file=_OUT.stream, color=colour or None)


def _progress_after() -> float:
    """Seconds of work before progress shows: half a second, or ``ACP_PROXY_PROGRESS_AFTER``."""
    return number("ACP_PROXY_PROGRESS_AFTER", 0.5)


class Progress:
    """Progress of long work on stderr, only when stderr is a terminal: a line redrawn at
    most a few times a second, starting once the work has taken half a second, cleared at
    the end."""

    def __init__(self, what: str, total: int | None = None) -> None:
        import time

        self.what = what
        self.total = total
        self.done = 0
        self._clock = time.monotonic
        self._start = self._clock()
        self._next = self._start + _progress_after()
        self._shown = False
        self.on = sys.stderr.isatty()

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self.on and self._clock() >= self._next:
            self._next = self._clock() + 0.25
            part = f"{self.done}"
            if self.total:
                part += f"/{self.total} ({min(100, 100 * self.done // self.total)}%)"
            click.echo(f"\r{visible(self.what)}: {part}\x1b[K", err=True, nl=False)
            self._shown = True
            _OUT.progress = self

    def clear(self) -> None:
        if self._shown:
            click.echo("\r\x1b[K", err=True, nl=False)
            self._shown = False
        if _OUT.progress is self:
            _OUT.progress = None

    def wrap(self, items: Iterator[T]) -> Iterator[T]:
        for item in items:
            self.advance()
            yield item

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.clear()


def colour_on() -> bool:
    return _OUT.colour


def set_colour(choice: str) -> None:
    """``--color auto|always|never``: whether what :func:`echo` prints is coloured."""
    _OUT.colour = _wants_colour(choice)


def _wants_colour(choice: str) -> bool:
    if choice == "always":
        return True
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    return sys.stdout.isatty() and os.environ.get("TERM") != "dumb"


@contextlib.contextmanager
def paged(enabled: bool = True) -> Iterator[None]:
    """Send what :func:`echo` prints to stdout through a pager, as ``git log`` does: only
    when stdout is a terminal; ``$ACP_PROXY_PAGER``, else ``$PAGER``, else ``less -FRX``
    (empty or ``cat``: no pager). Leaving the pager early ends the output quietly."""
    from acp_proxy.cli.pager import start_pager

    pager = start_pager() if enabled and sys.stdout.isatty() else None
    if pager is None:
        yield
        return
    _OUT.stream = pager.stdin
    try:
        yield
    except BrokenPipeError:
        pass
    finally:
        _OUT.stream = None
        pager.finish()


class Int(click.ParamType[int, Any]):
    """A whole number from ``minimum`` to ``maximum``, never beyond what SQLite holds
    (:func:`acp_proxy.store.numbers.parse_int`). Every integer option and argument takes
    this type (``tests/cli/test_numbers.py`` holds them to it), so a value out of range is
    one line on stderr and exit 2, never an ``OverflowError`` from SQLite."""

    name = "integer"

    def __init__(self, minimum: int = INT64_MIN, maximum: int = INT64_MAX) -> None:
        self.minimum = minimum
        self.maximum = maximum

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool):  # a default
            return value
        name = "value"
        if isinstance(param, click.Option):
            name = max(param.opts, key=len)
        elif param is not None:
            name = param.human_readable_name
        # our error, not click's usage screen: the root command prints it as one line
        return parse_int(str(value), name, minimum=self.minimum, maximum=self.maximum)


class Seconds(click.ParamType[float, Any]):
    """A number of seconds, more than zero (``zero``: or zero) and at most ``maximum``: as
    :class:`Int`, a value out of range is one line on stderr and exit 2."""

    name = "seconds"

    def __init__(self, maximum: float = 86400.0, *, zero: bool = False) -> None:
        self.maximum = maximum
        self.zero = zero

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):  # a default
            return float(value)
        name = max(param.opts, key=len) if isinstance(param, click.Option) else "value"
        try:
            seconds = float(str(value))
        except ValueError:
            raise UsageError(f"{name} takes a number of seconds, not {str(value)[:40]!r}") from None
        if self.zero and not 0 <= seconds <= self.maximum:  # (nan is neither)
            raise UsageError(f"{name} takes 0 or more seconds, at most {self.maximum:g}")
        if not self.zero and not 0 < seconds <= self.maximum:
            raise UsageError(f"{name} takes more than 0 seconds, at most {self.maximum:g}")
        return seconds


_NEGATIVE = re.compile(r"-[0-9]+")


class CaptureCommand(click.Command):
    """A command with a ``CAPTURE`` argument, which may be ``-1`` (the latest), ``-2``…: such
    a word is an argument, not an option, unless it is the value of an option before it."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        valued = {
            name
            for p in self.params
            if isinstance(p, click.Option) and not p.is_flag and not p.count
            for name in p.opts
        }
        words, refs = [], []
        for i, word in enumerate(args):
            if word == "--":
                words.extend(args[i:])
                break
            if _NEGATIVE.fullmatch(word) and (not words or words[-1] not in valued):
                refs.append(word)
            else:
                words.append(word)
        if refs:
            words += [] if "--" in words else ["--"]
            words += refs
        return super().parse_args(ctx, words)


class DashDashCommand(CaptureCommand):
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


def agent_command(words: Sequence[str]) -> list[str]:
    """The agent command of ``record`` and ``ws`` (their last argument takes every word
    left): the words after ``--``, or all of them when it was left out — but never one of
    our options, mistyped, taken for a program."""
    argv = list(words)
    if argv and argv[0] == "--":
        return argv[1:]
    if argv and argv[0].startswith("-"):
        raise UsageError(f"no such option: {argv[0]} (the agent command goes after --)")
    return argv


GROUP_DB_KEY = "acp_proxy.db"  # where a group's --db is kept (cli/options.py)


def expand_path(path: Path) -> Path:
    """``~`` and ``$VAR``/``${VAR}`` expanded as a shell would: editors pass arguments
    without one, and ``--db ~/acp.sqlite`` must not become ``./~/acp.sqlite``."""
    text = os.path.expandvars(os.path.expanduser(str(path)))
    return Path(os.path.expanduser(text))


def db_path(db: Path | None, *, relaying: bool = False, reading: bool = True) -> Path:
    """The database ``--db`` names (expanded: :func:`expand_path`), else the default. A
    path through a regular file is refused here, before anything tries to create it,
    except when ``relaying``: a relay forwards all the same and warns that nothing is
    recorded (the editor's agent must keep working). A command that reads it is told of
    traffic lying beside it that nothing has brought in yet (:func:`note_pending`)."""
    if db is None:  # a group's --db (acp-proxy replay --db X client …)
        ctx = click.get_current_context(silent=True)
        db = ctx.meta.get(GROUP_DB_KEY) if ctx is not None else None
    path = expand_path(db) if db is not None else default_db_path()
    for parent in [] if relaying else path.parents:
        if parent.exists():
            if not parent.is_dir():
                shown = db if db is not None else path
                raise UsageError(f"--db {shown}: {parent} is a file, not a directory")
            break
    if reading and not relaying:
        note_pending(path)
    return path


_noted: set[Path] = set()


def note_pending(path: Path) -> None:
    """One line on stderr, once, when journals or loss ledgers of ``path`` were left
    behind by relays and recorders that are gone: what is in the database is not all
    there is, and the line says how to bring the rest in."""
    if path in _noted:
        return
    _noted.add(path)
    from acp_proxy.record.spill import pending

    left = pending(path)
    if left:
        echo(f"acp-proxy: {left.describe(path)}", err=True)


def open_store(db: Path | None) -> Store:
    return Store(db_path(db))


def dump_json(v: Any, *, indent: bool = True) -> None:
    """Print ``v`` as JSON (C1 controls escaped too: :func:`~acp_proxy.text.safe.json_visible`)."""
    click.echo(json_bytes(v, indent=indent))

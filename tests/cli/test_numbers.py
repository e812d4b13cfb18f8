"""Numbers the database cannot hold: every integer a command takes, as a user types it.

Every integer option is found from the commands themselves (a new one is tested without
being listed here) and must take the shared bounded type; a number past 2^63 - 1, which
SQLite cannot bind, is one line on stderr and exit 2, never a traceback. Capture
references, ``--since`` and ``--older-than`` are numbers too.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from support.demo import demo_database
from support.proc import PROXY

from acp_proxy.cli import main

HUGE = "99999999999999999999"  # 20 digits: more than 2^63 - 1
INT64_MAX = str(2**63 - 1)

# what each command needs besides the option under test, so that only the option fails
_REQUIRED = {"search": ["foo"], "http": ["--upstream", "http://127.0.0.1:1/acp"]}


def _commands() -> Iterator[tuple[list[str], click.Command]]:
    ctx = click.Context(main)

    def walk(cmd: click.Command, path: list[str]) -> Iterator[tuple[list[str], click.Command]]:
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                assert sub is not None
                yield from walk(sub, [*path, name])
        else:
            yield path, cmd

    yield from walk(main, [])


def _integer_options() -> list[tuple[list[str], str]]:
    return [
        (path, max(p.opts, key=len))
        for path, cmd in _commands()
        for p in cmd.params
        if p.type.name in ("integer", "integer range")
    ]


INTEGER_OPTIONS = _integer_options()


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PROXY, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("numbers") / "rec.sqlite"
    return demo_database(db)


def _one_line(r: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("acp-proxy: error: "), r.stderr
    for needle in needles:
        assert needle in r.stderr, r.stderr


def test_every_integer_option_takes_the_bounded_type() -> None:
    assert len(INTEGER_OPTIONS) >= 15  # the walk found the commands' options
    loose = [
        (" ".join(path), opt)
        for path, cmd in _commands()
        for p in cmd.params
        for opt in p.opts[:1]
        if isinstance(p.type, click.types.IntParamType)  # click's own: no upper bound
    ]
    assert loose == []  # each takes acp_proxy.cli.common.Int


@pytest.mark.parametrize(
    ("path", "option"), INTEGER_OPTIONS, ids=[f"{' '.join(p)} {o}" for p, o in INTEGER_OPTIONS]
)
def test_a_number_too_large_for_sqlite_is_one_line(
    demo_db: Path, path: list[str], option: str
) -> None:
    required = _REQUIRED.get(path[0], [])
    _one_line(cli(*path, *required, option, HUGE, "--db", str(demo_db)), option, "at most")


@pytest.mark.parametrize(("value", "needle"), [(f"-{HUGE}", "or more"), ("²", "whole number")])
@pytest.mark.parametrize(
    ("path", "option"),
    [INTEGER_OPTIONS[0], INTEGER_OPTIONS[-1]],
    ids=lambda v: " ".join(v) if isinstance(v, list) else v,
)
def test_a_number_out_of_range_or_not_ascii_is_one_line(
    demo_db: Path, path: list[str], option: str, value: str, needle: str
) -> None:
    """The shared type, which every integer option takes (above), on two of them."""
    required = _REQUIRED.get(path[0], [])
    _one_line(cli(*path, *required, option, value, "--db", str(demo_db)), option, needle)


@pytest.mark.parametrize(
    "args",
    [
        ["show", HUGE],
        ["show", "-" + HUGE],
        ["rm", HUGE],
        ["export", HUGE],
        ["share", HUGE, "-o", "-"],
        ["tools", HUGE],
        ["terminals", HUGE],
        ["diffs", HUGE],
        ["check", HUGE],
        ["diff", "1", HUGE],
        ["replay", "agent", HUGE],
        ["otel", "push", HUGE, "--endpoint", "http://127.0.0.1:1"],
        ["search", "foo", "--capture", HUGE],
        ["show", "1", "--since", HUGE + "m"],
        ["show", "1", "--since", "9999-01-01T00:00:00"],
        ["prune", "--older-than", HUGE + "d"],
        ["prune", "--older-than", "9999999999999d"],
        ["show", "²"],
    ],
    ids=lambda a: " ".join(a),
)
def test_numbers_in_other_arguments_are_one_line(demo_db: Path, args: list[str]) -> None:
    _one_line(cli(*args, "--db", str(demo_db)))


# (not the listeners: they would start listening, and keep no such number in the database)
READERS = [(p, o) for p, o in INTEGER_OPTIONS if p[0] not in ("http", "ws")]


@pytest.mark.parametrize(
    ("path", "option"), READERS, ids=[f"{' '.join(p)} {o}" for p, o in READERS]
)
def test_the_largest_number_sqlite_holds_is_taken(
    demo_db: Path, path: list[str], option: str
) -> None:
    r = cli(*path, *_REQUIRED.get(path[0], []), option, INT64_MAX, "--db", str(demo_db))
    assert "Traceback" not in r.stderr and r.returncode in (0, 2), r.stderr

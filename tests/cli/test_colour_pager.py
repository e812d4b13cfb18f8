"""Colour and paging as a user sees them: a real pseudo-terminal, a real pager process.
Both only when stdout is a terminal; --color, NO_COLOR and --no-pager honoured; peer
strings never reach the terminal as controls, coloured or not."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest
from support.demo import demo_database
from support.hostile import hostile_session, raw_controls, record_script
from support.proc import PROXY

OURS = re.compile(rb"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("demo") / "rec.sqlite"
    demo_database(db)
    return db


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "PAGER", "LESS")}
    env["ACP_PROXY_PAGER"] = ""  # no pager unless a test sets one
    env["TERM"] = "xterm-256color"
    env.update(extra)
    return env


def in_pty(args: list[str], env: dict[str, str]) -> tuple[int, bytes]:
    """Run with stdout on a pseudo-terminal (stdin and stderr too); what it printed."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([*PROXY, *args], stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    out = b""
    while True:
        ready = select.select([master], [], [], 60)[0]
        if not ready:
            break
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:  # EIO: the other side is closed
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return proc.wait(60), out


def piped(args: list[str], env: dict[str, str]) -> bytes:
    r = subprocess.run([*PROXY, *args], capture_output=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_colour_only_on_a_terminal(demo_db: Path) -> None:
    show = ["show", "--db", str(demo_db)]
    code, out = in_pty(show, _env())
    assert code == 0
    assert b"\x1b[32m\xe2\x86\x90\x1b[0m" in out  # the agent's arrow, green
    assert b"\x1b[34m\xe2\x86\x92\x1b[0m" in out  # the client's, blue
    assert b"\x1b[" not in piped(show, _env())
    assert b"\x1b[" not in in_pty(show, _env(NO_COLOR="1"))[1]
    assert b"\x1b[" not in in_pty([*show, "--color", "never"], _env())[1]
    assert b"\x1b[32m" in piped([*show, "--color", "always"], _env())
    assert b"\x1b[" not in in_pty(show, _env(TERM="dumb"))[1]


def test_terminal_screens_keep_their_colours(demo_db: Path) -> None:
    out = piped(["terminals", "--db", str(demo_db), "--color", "always"], _env())
    assert b"\x1b[0;32m3 passed\x1b[0m" in out
    plain = piped(["terminals", "--db", str(demo_db)], _env())
    assert b"3 passed" in plain and b"\x1b" not in plain


def _fake_pager(tmp_path: Path) -> tuple[str, Path]:
    log = tmp_path / "paged.txt"
    script = tmp_path / "pager.py"
    script.write_text(
        "import os, sys\n"
        "data = sys.stdin.buffer.read()\n"
        "open(sys.argv[1], 'wb').write(os.environ.get('LESS', '-').encode() + b'\\n' + data)\n"
        "sys.stdout.buffer.write(data)\n"
    )
    return f"{sys.executable} {script} {log}", log


def test_long_output_goes_through_a_pager_only_on_a_terminal(demo_db: Path, tmp_path: Path) -> None:
    pager, log = _fake_pager(tmp_path)
    for args in (["show"], ["captures"], ["show", "--view", "turns"], ["tools"]):
        log.unlink(missing_ok=True)
        code, _out = in_pty([*args, "--db", str(demo_db)], _env(ACP_PROXY_PAGER=pager))
        assert code == 0 and log.exists(), args
        paged = log.read_bytes()
        assert paged.startswith(b"FRX\n")  # like git: quit if one screen, colours, no clear
        assert b"\x1b[" in paged or args != ["show"]  # colour decided by our stdout
    log.unlink()
    piped(["show", "--db", str(demo_db)], _env(ACP_PROXY_PAGER=pager))
    assert not log.exists()
    in_pty(["show", "--db", str(demo_db), "--no-pager"], _env(ACP_PROXY_PAGER=pager))
    assert not log.exists()
    # $PAGER is used when ours is unset; "cat" means none
    env = _env(PAGER=pager)
    del env["ACP_PROXY_PAGER"]
    in_pty(["show", "--db", str(demo_db)], env)
    assert log.exists()
    log.unlink()
    in_pty(["show", "--db", str(demo_db)], _env(ACP_PROXY_PAGER="cat"))
    assert not log.exists()


def test_a_missing_pager_prints_directly(demo_db: Path) -> None:
    code, out = in_pty(["show", "--db", str(demo_db)], _env(ACP_PROXY_PAGER="no-such-pager-x"))
    assert code == 0 and b"session/prompt" in out


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("hostile")
    db = tmp / "rec.sqlite"
    r = record_script(db, tmp, hostile_session("/work/project"))
    assert r.returncode == 0, r.stderr
    return db


@pytest.mark.parametrize(
    "args",
    [
        ["show"],
        ["show", "--wall"],
        ["captures"],
        ["tail", "-n", "100"],
        ["terminals"],
        ["tools"],
        ["show", "--view", "turns"],
        ["show", "--view", "terminals"],
    ],
    ids=" ".join,
)
def test_colour_never_lets_a_peer_string_through(hostile_db: Path, args: list[str]) -> None:
    out = piped([*args, "--db", str(hostile_db), "--color", "always"], _env())
    # colour marks states (errors, anomalies, failed calls): the tools view and a turns view
    # whose turn ended well may have none; what matters is that no peer control survives
    assert OURS.search(out) or args in (["tools"], ["show", "--view", "turns"])
    assert raw_controls(OURS.sub(b"", out)) == []
    assert b"\\x1b" in out  # the hostile strings are shown, as escapes


def test_many_lines_are_printed_as_echo_prints_each(capsys: pytest.CaptureFixture[str]) -> None:
    # a view's text is written a batch of lines at a time: the same text as line by line,
    # across batch boundaries, a peer's control characters escaped
    from acp_proxy.cli.common import echo, echo_lines
    from acp_proxy.text.style import Styled

    lines: list[str | Styled] = [f"line {i}" for i in range(1300)]
    lines += [Styled.of(("boom\x1b[31m", "error"), " tail"), "\x07bell"]
    for line in lines:
        echo(line)
    one_by_one = capsys.readouterr().out
    echo_lines(lines, batch=512)
    assert capsys.readouterr().out == one_by_one
    assert one_by_one.count("\n") == len(lines) and "\x1b" not in one_by_one

"""Small rules written once: each is in one module, and the commands that share it agree.

The garbage collector is switched in ``collector.py`` only; the signals that stop us are
named in ``transports/signals.py`` only; an agent command is split at ``--`` in
``cli/common.py`` only; rows are read as dicts through ``Store.dicts`` only; every listener
reads ``--listen`` through ``relay.core.admission.listen_address``; ``--grace`` is one
option of one type; a number from the environment is read by ``settings.number``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.paths import PACKAGE, RECORDINGS

from acp_proxy.cli import main
from acp_proxy.errors import UsageError
from acp_proxy.relay.core.admission import listen_address

# the demo's own programs parse their own command lines
OWN_PROGRAMS = ("demo/",)


def _where(pattern: str) -> list[str]:
    found = []
    for f in sorted(PACKAGE.rglob("*.py")):
        rel = f.relative_to(PACKAGE).as_posix()
        if rel.startswith(OWN_PROGRAMS):
            continue
        if re.search(pattern, f.read_text(encoding="utf-8")):
            found.append(rel)
    return found


def test_each_small_rule_is_written_in_one_place() -> None:
    assert _where(r"gc\.(freeze|disable|enable|set_threshold)\(") == ["collector.py"]
    assert _where(r"SIGINT,\s*signal\.SIGTERM,\s*signal\.SIGHUP") == ["transports/signals.py"]
    assert _where(r'== "--"') == ["cli/common.py"]
    assert _where(r"dict\(zip\(") == ["store/reader.py"]
    assert _where(r"sqlite_utils|\.db\.query\(") == []
    assert _where(r'rpartition\(":"\)') == ["relay/core/admission.py"]
    # a number the environment sets is read, and refused, in one way
    assert _where(r"(float|int)\(\s*(os\.)?environ") == []
    assert _where(r"(float|int)\(_?[A-Z_]*(SET|ENV)\b") == []


def test_listen_address() -> None:
    assert listen_address("127.0.0.1:8765") == ("127.0.0.1", 8765)
    assert listen_address("[::1]:0") == ("::1", 0)
    assert listen_address(":9") == ("127.0.0.1", 9)
    for bad in ("nonsense", "host:", "host:65536", "host:-1"):
        with pytest.raises(UsageError):
            listen_address(bad)


@pytest.mark.parametrize(
    "command",
    [
        ["ws", "--upstream", "ws://x/acp"],
        ["http", "--upstream", "http://x/acp"],
        ["ui"],
        ["replay", "agent", str(RECORDINGS / "demo-v1.jsonl")],
    ],
)
def test_every_listener_reads_listen_alike(command: list[str], tmp_path: Path) -> None:
    db = ["--db", str(tmp_path / "rec.sqlite")]
    result = CliRunner().invoke(main, [*command, *db, "--listen", "nonsense"])
    assert result.exit_code == 2
    assert result.output == (
        "acp-proxy: error: --listen wants HOST:PORT (e.g. 127.0.0.1:8765), not 'nonsense'\n"
    )


def test_grace_is_zero_or_more_seconds_everywhere() -> None:
    for command in (["record", "--grace", "-1", "--", "true"], ["ws", "--grace", "-1"]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 2
        assert "--grace takes 0 or more seconds" in result.output


def test_an_option_mistyped_before_the_agent_command_is_refused() -> None:
    result = CliRunner().invoke(main, ["ws", "--listen", "127.0.0.1:0", "--bogus", "agent"])
    assert result.exit_code == 2
    assert "no such option: --bogus (the agent command goes after --)" in result.output

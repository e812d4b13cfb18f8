"""Numbers the environment sets (``ACP_PROXY_*``): a bad one is one line on stderr and the
default, never a crash: the relay reads some before it forwards a byte."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.proc import db_rows, run_proxy

from acp_proxy import settings

LINE = b'{"jsonrpc":"2.0","method":"x"}\n'


@pytest.mark.parametrize(
    ("text", "integer", "expected"),
    [
        ("", False, 7.0),
        (" 2.5 ", False, 2.5),
        ("0", False, 0.0),
        ("86400", False, 86400.0),
        ("12", True, 12.0),
        ("soon", False, None),
        ("-1", False, None),
        ("nan", False, None),
        ("inf", False, None),
        ("1e9", False, None),
        ("2.5", True, None),
        ("1_0", False, 10.0),
    ],
)
def test_number(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    text: str,
    integer: bool,
    expected: float | None,
) -> None:
    name = f"ACP_PROXY_TEST_{abs(hash((text, integer)))}"
    monkeypatch.setenv(name, text)
    got = settings.number(name, 7, integer=integer)
    err = capsys.readouterr().err
    if expected is None:
        assert got == 7
        assert err.count("\n") == 1 and err.startswith(f"acp-proxy: warning: {name}=")
        assert "taking 7" in err
        settings.number(name, 7, integer=integer)
        assert capsys.readouterr().err == ""  # said once
    else:
        assert got == expected and err == ""


@pytest.mark.parametrize(
    "name",
    [
        "ACP_PROXY_RECORDER_PATIENCE",
        "ACP_PROXY_RECORDER_QUIET_LOCK",
        "ACP_PROXY_BUSY_TIMEOUT_MS",
        "ACP_PROXY_INDEX_WAIT",
    ],
)
def test_a_bad_number_costs_the_relay_nothing(db: Path, tmp_path: Path, name: str) -> None:
    agent = ["sh", "-c", 'printf \'%s\\n\' \'{"jsonrpc":"2.0","method":"x"}\'']
    r = run_proxy(db, agent, env={**os.environ, name: "soon"})
    assert r.returncode == 0 and r.stdout == LINE, r.stderr
    assert b"Traceback" not in r.stderr
    assert f"acp-proxy: warning: {name}='soon' is not".encode() in r.stderr, r.stderr
    assert r.stderr.count(name.encode()) == 1  # the recorder, told, does not say it again
    assert db_rows(db, "SELECT raw FROM messages") == [(LINE.rstrip(b"\n"),)]

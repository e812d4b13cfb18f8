"""A real agent that speaks ACP v2 offline: ``@agentclientprotocol/codex-acp`` 2.6.0, pinned
in ``tests/npm-peers`` (installed as docs/peers.md says), through ``acp-proxy record``.

It runs with a fake API key, and HOME and CODEX_HOME in a temporary directory, so it reaches
no network and touches no user file: ``initialize`` (v2), ``auth/login`` with the key (it
sends ``_auth/status_update``), ``session/new``. The capture must be recorded as v2, give no
error-level finding, and its views must show the session it opened.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from support.paths import TESTS
from support.proc import PROXY, wait_recorded

CODEX = TESTS / "npm-peers" / "node_modules" / "@agentclientprotocol" / "codex-acp"
ENTRY = CODEX / "dist" / "index.js"

pytestmark = [
    pytest.mark.peers,
    pytest.mark.skipif(
        not ENTRY.is_file() or shutil.which("node") is None,
        reason="codex-acp is not installed: see docs/peers.md (needs node)",
    ),
]


class _Peer:
    """The client side: JSON lines to the proxy's stdin, answers read from its stdout."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=cwd
        )
        self.sel = selectors.DefaultSelector()
        assert self.proc.stdout is not None
        self.sel.register(self.proc.stdout, selectors.EVENT_READ)
        self.seen: list[dict[str, Any]] = []

    def call(self, i: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        msg = {"jsonrpc": "2.0", "id": i, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if not self.sel.select(timeout=1):
                continue
            line = self.proc.stdout.readline()
            assert line, "the agent closed its stdout"
            value = json.loads(line)
            self.seen.append(value)
            if value.get("id") == i and "method" not in value:
                return value  # type: ignore[no-any-return]
        raise AssertionError(f"no answer to {method} within 60 s")

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


def _json(*args: str) -> Any:
    out = subprocess.run([*PROXY, *args], capture_output=True, timeout=120)
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


def test_codex_acp_is_recorded_as_v2_and_checks_without_error(tmp_path: Path, db: Path) -> None:
    home = tmp_path / "home"
    work = tmp_path / "work"
    for d in (home, home / "codex", work):
        d.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "CODEX_HOME": str(home / "codex"),
        "OPENAI_API_KEY": "sk-fake-offline-key",
    }
    peer = _Peer([*PROXY, "record", "--db", str(db), "--", "node", str(ENTRY)], env, work)
    try:
        init = peer.call(
            0,
            "initialize",
            {"protocolVersion": 2, "info": {"name": "acp-proxy-test", "version": "0"}},
        )
        assert init["result"]["protocolVersion"] == 2
        login = peer.call(1, "auth/login", {"methodId": "api-key"})
        assert "result" in login, login
        new = peer.call(2, "session/new", {"cwd": str(work)})
        sid = new["result"]["sessionId"]
    finally:
        peer.close()
    assert any(m.get("method") == "_auth/status_update" for m in peer.seen)
    wait_recorded(db)
    report = _json("check", "--db", str(db), "--format", "json")
    (capture,) = report["captures"]
    assert capture["protocol_version"] == 2
    errors = [f for f in capture["findings"] if f["severity"] == "error"]
    assert errors == []
    sessions = _json("show", "--db", str(db), "--view", "sessions", "--json")
    (session,) = sessions
    assert session["sessionId"] == sid and session["cwd"] == str(work)
    assert session["configOptions"] and session["parentSessionId"] is None
    assert _json("show", "--db", str(db), "--view", "turns", "--json") == []

"""What ``captures`` says of a WebSocket connection that never got relayed: refused with its
status, upstream failed, agent not started; and ``ws`` checks its agent command at start."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.ports import refusing_port
from support.proc import PROXY
from support.ws import RAW, running_proxy, upstream_server
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus


def _statuses(db: Path) -> list[str]:
    r = subprocess.run(
        [*PROXY, "captures", "--db", str(db), "--json"], capture_output=True, text=True
    )
    return [c["status"] for c in json.loads(r.stdout)]


async def test_refused_connections_say_so(db: Path) -> None:
    async with upstream_server() as up, running_proxy(db, upstream=up.url, token="t0k") as proxy:
        with pytest.raises(InvalidStatus):
            await connect(proxy.url + "/acp", **RAW)
        with pytest.raises(InvalidStatus):
            await connect(proxy.url + "/acp", additional_headers=[("Origin", "https://x")], **RAW)
        async with connect(proxy.url + "/acp?token=t0k", **RAW) as ws:
            await ws.send("a")
            await ws.recv()
    assert _statuses(db) == ["refused 401", "refused 403", "closed"]


async def test_an_unreachable_upstream_says_so(db: Path) -> None:
    with refusing_port() as port:
        async with running_proxy(db, upstream=f"ws://127.0.0.1:{port}") as proxy:
            with pytest.raises(InvalidStatus):
                await connect(proxy.url + "/acp", **RAW)
    assert _statuses(db) == ["upstream failed 502"]


@pytest.mark.parametrize(
    ("agent", "code", "message"),
    [
        ("no-such-agent-xyz", 127, "agent command not found: no-such-agent-xyz"),
        ("{tmp}/agent.sh", 126, "agent command cannot be executed: {tmp}/agent.sh"),
        ("{tmp}/missing.sh", 127, "agent command not found: {tmp}/missing.sh"),
    ],
)
def test_ws_checks_its_agent_command_at_start(
    db: Path, tmp_path: Path, agent: str, code: int, message: str
) -> None:
    (tmp_path / "agent.sh").write_text("#!/bin/sh\n")
    (tmp_path / "agent.sh").chmod(0o644)
    agent = agent.format(tmp=tmp_path)
    message = message.format(tmp=tmp_path)
    r = subprocess.run(
        [*PROXY, "ws", "--db", str(db), "--listen", "127.0.0.1:0", "--", agent],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == code, r.stderr
    assert r.stderr == f"acp-proxy: error: {message}\n"


def test_ws_starts_with_a_good_agent_command(db: Path) -> None:
    proc = subprocess.Popen(
        [*PROXY, "ws", "--db", str(db), "--listen", "127.0.0.1:0", "--", sys.executable, "-V"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        assert "listening on" in proc.stderr.readline()
    finally:
        proc.terminate()
        proc.wait(timeout=20)

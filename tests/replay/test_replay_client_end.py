"""How a ``replay client`` run ends: always within a bounded time, the agent's whole process
group ended and named in the report; an exit the client or the proxy caused is not the
agent's behaviour and is not compared; every ``--ignore`` key docs/replay.md lists works."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from support.proc import PROXY, db_rows, peer, wait_recorded
from support.replay import DATA, DEMO_AGENT, replay_client_cmd, sdk_session

from acp_proxy.demo import run_demo

CHANGED = [sys.executable, str(DATA / "changed_agent.py")]


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("replay-end") / "demo.sqlite"
    run_demo(db)
    return db


def replay(db: Path, *args: str, agent: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    return subprocess.run(
        [*replay_client_cmd(db, *args), "--", *agent],
        capture_output=True,
        text=True,
        timeout=90,  # a hang guard: the run itself ends in seconds
        env=env,
    )


def running_with(marker: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            cmd = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmd and state[state.rfind(b")") + 2 :][:1] != b"Z":
            pids.append(int(entry.name))
    return pids


def npm_like(marker: str) -> list[str]:
    """A launcher whose child runs the demo agent, then keeps the agent's stdout open for
    a long time and ignores SIGTERM: the shape that made a replay wait for ever."""
    child = ["sh", "-c", f'"$@"; exec sleep 300 # {marker}', "sh", *DEMO_AGENT]
    return peer("launcher_agent.py", "--stubborn", "--", *child)


def test_an_npm_style_agent_is_ended_in_bounded_time_and_named(demo_db: Path) -> None:
    marker = f"acp-proxy-test-{uuid.uuid4().hex}"
    try:
        r = replay(demo_db, "1", agent=npm_like(marker))
        assert r.returncode == 0, r.stdout + r.stderr
        lines = r.stdout.splitlines()
        assert lines[-1] == "no divergence"
        killed = [line for line in lines if "ending the agent took a signal" in line]
        assert any("SIGKILL (left in the agent's group)" in k and "sleep" in k for k in killed)
        assert running_with(marker) == []
    finally:
        for pid in running_with(marker):
            os.kill(pid, 9)


def test_an_exit_the_proxy_caused_is_not_compared(demo_db: Path) -> None:
    """A first replay had to end the agent (SIGTERM, exit 143): replaying that capture
    against an agent that exits by itself is no divergence."""
    marker = f"acp-proxy-test-{uuid.uuid4().hex}"
    try:
        first = json.loads(replay(demo_db, "1", "--json", agent=npm_like(marker)).stdout)
    finally:
        for pid in running_with(marker):
            os.kill(pid, 9)
    assert first["agent_exit_code"] == 143
    r = replay(demo_db, str(first["replay_capture"]), "--json", agent=DEMO_AGENT)
    out = json.loads(r.stdout)
    assert r.returncode == 0 and out["divergences"] == [], r.stdout


def test_an_exit_the_editors_sigterm_caused_is_not_compared(tmp_path: Path) -> None:
    """The SDK's client closes stdin, waits 2 s, then sends SIGTERM: an agent that is still
    there dies of it (143), passed on by the proxy. That is the client's doing."""
    db = tmp_path / "sdk.sqlite"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    lingers = ["sh", "-c", '"$@"; exec sleep 30', "sh", *DEMO_AGENT]
    asyncio.run(sdk_session([*PROXY, "record", "--db", str(db), "--", *lingers], workspace))
    wait_recorded(db)
    assert db_rows(db, "SELECT exit_code FROM captures") == [(143,)]
    assert [k for (k,) in db_rows(db, "SELECT kind FROM events")].count("signal") == 1
    r = replay(db, "1", agent=DEMO_AGENT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "exit code" not in r.stdout


@pytest.mark.parametrize(
    ("mode", "key", "divergence"),
    [
        ("command", "params.command", 'params.command: recorded "python3"'),
        ("title", "params.update.title", "title: recorded Read config.json"),
        ("content", "params.content", "config.json"),
        ("exit", "exit_code", "agent exit code: recorded 0; replayed 3"),
    ],
)
def test_each_documented_ignore_key_masks_what_it_names(
    demo_db: Path, mode: str, key: str, divergence: str
) -> None:
    changed = replay(demo_db, "1", agent=[*CHANGED, mode])
    assert changed.returncode == 1, changed.stdout + changed.stderr
    assert divergence in changed.stdout
    masked = replay(demo_db, "1", "--ignore", key, agent=[*CHANGED, mode])
    assert masked.returncode == 0, masked.stdout + masked.stderr
    assert masked.stdout.splitlines()[-1] == "no divergence"

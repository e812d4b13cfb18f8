"""acpx, a published headless ACP client, with the published agents through ``record``, through
a stdio → WebSocket → stdio chain (``record --upstream`` in front of ``ws``), and against
``replay agent``: acpx runs one prompt (``acpx exec``) and fails as a user offline sees it fail
(docs/peers.md), then ends its agent the way it always does: stdin closed, SIGTERM 100 ms
later, SIGKILL 1.5 s after that.

What acpx received is copied on its way (tests/peers/tee_stdout.py, exec'd in the proxy's
place so acpx's signals reach the proxy itself) and must be the recorded bytes; the
recording, served by ``replay agent``, must make acpx fail the same way, byte for byte;
``replay client`` must re-run it against the agent without divergence, in bounded time.
"""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import ptree
from support.editor import listening
from support.paths import PEERS
from support.proc import PROXY, wait_ended, wait_recorded
from support.realpeers import ACPX, AGENTS, RealPeer, Sandbox, require, sandbox

from acp_proxy.protocol.frames import Direction
from acp_proxy.store.reader import Store

pytestmark = pytest.mark.peers

A2C = Direction.AGENT_TO_CLIENT
ACPX_BOUND = 60.0  # seconds for one acpx run (its own --timeout is 30)
LEFT_BOUND = 10.0  # seconds for the agent's tree to be gone once acpx has exited
# what acpx's last line says went wrong, per agent: acpx signs in only with the methods it
# knows an environment variable for, and codex-acp's "api-key" is not one of them
ACPX_FAILURE = {
    "codex-acp": b"Authentication required",
    "gemini": b"fetch failed",
    "qwen": b"Connection error.",
}


def _none(_: ptree.Proc) -> bool:
    return False


@dataclass
class AcpxRun:
    code: int
    stdout: bytes
    stderr: bytes
    seen: bytes  # every byte acpx's agent command wrote to acpx
    left: list[ptree.Proc]  # processes of the run still there LEFT_BOUND s after acpx exited


def run_acpx(
    box: Sandbox, agent: list[str], seen: Path, *, stays: Callable[[ptree.Proc], bool] = _none
) -> AcpxRun:
    """``acpx exec hello`` with ``agent`` as its agent command, what it received kept; the
    processes that ``stays`` are not expected to end with acpx."""
    teed = [sys.executable, str(PEERS / "tee_stdout.py"), str(seen), *agent]
    argv = [*ACPX.command(), "--agent", shlex.join(teed), "--approve-all", "--format", "json"]
    done = subprocess.run(
        [*argv, "--timeout", "30", "exec", "hello"],
        env=box.env,
        cwd=box.workspace,
        capture_output=True,
        timeout=ACPX_BOUND,
    )
    ours = [p for p in ptree.marked(box.marker) if not stays(p)]
    left = ptree.wait_gone(ours, LEFT_BOUND)
    return AcpxRun(done.returncode, done.stdout, done.stderr, seen.read_bytes(), left)


@dataclass
class Recorded:
    agent: RealPeer
    box: Sandbox
    db: Path
    run: AcpxRun


@pytest.fixture(scope="module", params=AGENTS, ids=lambda a: a.name)
def session(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Recorded]:
    """acpx through ``acp-proxy record`` with one agent, over."""
    agent: RealPeer = request.param
    require(ACPX)
    require(agent)
    root = tmp_path_factory.mktemp(f"acpx-{agent.name}")
    box, db = sandbox(root), root / "rec.sqlite"
    try:
        record = [*PROXY, "record", "--db", str(db), "--", *agent.command()]
        run = run_acpx(box, record, root / "seen")
        wait_recorded(db, 60)
        yield Recorded(agent, box, db, run)
    finally:
        ptree.kill_marked(box.marker)


def _a2c(db: Path, ref: int) -> bytes:
    store = Store(db)
    try:
        return store.stream_bytes(int(store.capture(ref)["id"]), A2C)
    finally:
        store.close()


def test_acpx_saw_exactly_what_was_recorded(session: Recorded) -> None:
    run = session.run
    assert run.code == 1, run.stderr.decode(errors="replace")
    assert ACPX_FAILURE[session.agent.name] in run.stdout.splitlines()[-1]
    assert run.seen == _a2c(session.db, 1)


def test_no_process_is_left_once_acpx_is_done(session: Recorded) -> None:
    """acpx ends the proxy with SIGTERM, then SIGKILL: the agent's tree goes with it."""
    assert session.run.left == [], "\n".join(map(str, session.run.left))


def test_replay_agent_fails_acpx_the_same_way(session: Recorded, tmp_path: Path) -> None:
    replay = [*PROXY, "replay", "agent", "1", "--db", str(session.db)]
    try:
        again = run_acpx(session.box, replay, tmp_path / "seen")
    finally:
        ptree.kill_marked(session.box.marker)
    assert again.seen == session.run.seen
    assert again.code == session.run.code
    # acpx prints what it sent and what it received as it goes: when the agent's own
    # announcement comes close to acpx's prompt, which of the two it prints first is acpx's
    # timing, on either run; what it printed, and its last word, are the same
    printed, before = again.stdout.splitlines(), session.run.stdout.splitlines()
    assert printed[-1] == before[-1]
    assert sorted(printed) == sorted(before)


def test_replay_client_reruns_the_acpx_session_without_divergence(
    session: Recorded, tmp_path: Path
) -> None:
    box = sandbox(tmp_path)
    argv = [*PROXY, "replay", "client", "1", "--db", str(session.db), "--cwd", str(box.workspace)]
    try:
        done = subprocess.run(
            [*argv, "--", *session.agent.command()],
            env=box.env,
            cwd=box.workspace,
            capture_output=True,
            timeout=60,
        )
    finally:
        # what the run started ends with it: the guard, say, within moments
        left = ptree.wait_gone(ptree.marked(box.marker), 5)
        ptree.kill_marked(box.marker)
    report = done.stdout.decode(errors="replace")
    assert done.returncode == 0, report + done.stderr.decode(errors="replace")[-2000:]
    assert "no divergence" in report
    assert left == [], "\n".join(map(str, left))


@pytest.fixture(params=AGENTS, ids=lambda a: a.name)
def agent(request: pytest.FixtureRequest) -> RealPeer:
    peer: RealPeer = request.param
    require(ACPX)
    require(peer)
    return peer


def _of_listener(p: ptree.Proc, listener: int) -> bool:
    """Whether ``p`` is the listener or one of its own processes (its recorder, its guard,
    an agent of a client still connected): they go when the listener does."""
    return p.pid == listener or p.pid in {q.pid for q in ptree.below(listener)}


def test_acpx_through_the_ws_bridge_saw_what_both_legs_recorded(
    agent: RealPeer, tmp_path: Path
) -> None:
    """acpx → ``record --upstream ws://…`` → ``ws -- AGENT``: one capture per proxy; acpx's
    bytes are the stdio leg's; the messages the bridge delivered are those the first proxy
    received, and what the agent said after acpx had gone is counted as undelivered."""
    box, db = sandbox(tmp_path / "box"), tmp_path / "rec.sqlite"
    bridge = [*PROXY, "ws", "--db", str(db), "--listen", "127.0.0.1:0", "--", *agent.command()]
    try:
        with listening(bridge, env=box.env, cwd=box.workspace, stderr=tmp_path / "ws.err") as (
            proxy,
            url,
        ):
            up = [*PROXY, "record", "--db", str(db), "--upstream", f"{url}/acp"]
            run = run_acpx(box, up, tmp_path / "seen", stays=lambda p: _of_listener(p, proxy.pid))
            wait_ended(db, 2)
            proxy.send_signal(signal.SIGINT)
            assert proxy.wait(30) == 0
        wait_recorded(db, 60)
    finally:
        ptree.kill_marked(box.marker)
    assert run.code == 1, run.stderr.decode(errors="replace")
    assert ACPX_FAILURE[agent.name] in run.stdout.splitlines()[-1]
    assert run.left == [], "\n".join(map(str, run.left))
    store = Store(db)
    try:
        by_transport = {c["transport"]: int(c["id"]) for c in store.captures()}
        assert sorted(by_transport) == ["stdio-ws", "ws-stdio"]
        assert run.seen == store.stream_bytes(by_transport["stdio-ws"], A2C)
        client, bridge = (
            [(f.opcode_text, f.raw) for f in store.frames(by_transport[t]) if f.direction is A2C]
            for t in ("stdio-ws", "ws-stdio")
        )
        ends = [
            json.loads(e["detail"])
            for e in store.events(by_transport["ws-stdio"])
            if e["kind"] == "direction_end"
        ]
    finally:
        store.close()
    (end,) = [e for e in ends if e["direction"] == "a2c"]
    assert client == bridge[: end["delivered"]]
    assert len(bridge) - end["delivered"] == end.get("undelivered", 0)

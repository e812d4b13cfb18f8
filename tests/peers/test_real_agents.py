"""Published agents (codex-acp, Gemini CLI, Qwen Code) through ``record`` and the ``ws``
bridge, driven by a scripted editor as far as they go offline: initialize, sign-in,
session/new, and a prompt that fails for want of a network (docs/peers.md).

What must hold with the real programs, not only with the SDK examples: the editor's view is
the recording, byte for byte; the agent's stderr is recorded as it wrote it; the recording
replays against the same agent without divergence, in bounded time; and once the session is
over, or the proxy is killed, no process of the agent's tree is left running.
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support import ptree
from support.editor import Editor, StdioWire, WsWire, listening, open_session, prompt_fails
from support.proc import PROXY, wait_ended, wait_recorded
from support.realpeers import AGENTS, RealPeer, Sandbox, require, sandbox

from acp_proxy.protocol.frames import Direction
from acp_proxy.store.reader import Store

pytestmark = pytest.mark.peers

C2A, A2C = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT
KILL_BOUND = 10.0  # seconds for a killed proxy's agent tree to be gone (the proxy's grace is 1)
SIGNALS_IN_FLIGHT = 1.0  # seconds for the last signals the proxy sent to land
REPLAY_BOUND = 60.0  # seconds for `replay client` to finish


@dataclass
class Session:
    """One editor session through ``acp-proxy record``, over."""

    agent: RealPeer
    box: Sandbox
    db: Path
    sent: bytes
    received: bytes
    stderr: bytes  # what the proxy wrote on its stderr
    exit_code: int
    left: list[ptree.Proc]  # processes of the run still there once it was over
    session_id: str  # what session/new answered


@pytest.fixture(scope="module", params=AGENTS, ids=lambda a: a.name)
def session(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Session]:
    agent: RealPeer = request.param
    require(agent)
    root = tmp_path_factory.mktemp(agent.name)
    box, db = sandbox(root), root / "rec.sqlite"
    try:
        with StdioWire(
            [*PROXY, "record", "--db", str(db), "--", *agent.command()],
            env=box.env,
            cwd=box.workspace,
            stderr=root / "proxy.stderr",
        ) as wire:
            editor = Editor(wire)
            sid = open_session(editor, agent, box.workspace)
            prompt_fails(editor, agent, sid)
            code = wire.finish(60)
        wait_recorded(db, 60)
        left = ptree.wait_gone(ptree.marked(box.marker), 5)
        stderr = (root / "proxy.stderr").read_bytes()
        yield Session(agent, box, db, bytes(wire.sent), bytes(wire.received), stderr, code, left,
                      sid)  # fmt: skip
    finally:
        ptree.kill_marked(box.marker)


@dataclass
class Recorded:
    """What the database holds of one capture."""

    capture: dict[str, Any]
    c2a: bytes
    a2c: bytes
    frames: list[tuple[Direction, str | None, bytes]]  # direction, WebSocket opcode, payload
    stderr: bytes


def recorded(db: Path, ref: int) -> Recorded:
    store = Store(db)
    try:
        c = store.capture(ref)
        frames = [(f.direction, f.opcode_text, f.raw) for f in store.frames(c["id"])]
        return Recorded(
            c,
            store.stream_bytes(c["id"], C2A),
            store.stream_bytes(c["id"], A2C),
            frames,
            b"".join(data for _, data in store.stderr(c["id"])),
        )
    finally:
        store.close()


def test_the_editor_saw_exactly_what_was_recorded(session: Session) -> None:
    rec = recorded(session.db, 1)
    assert rec.a2c == session.received
    assert rec.c2a == session.sent
    assert session.exit_code == 0
    assert rec.capture["exit_code"] == 0


def test_the_agent_stderr_is_recorded_as_written(session: Session) -> None:
    recorded_stderr = recorded(session.db, 1).stderr
    assert recorded_stderr == session.stderr  # nothing of ours in between, nothing lost
    if session.agent.stderr_says is not None:
        assert session.agent.stderr_says in recorded_stderr


def test_check_finds_no_error_in_what_was_said(session: Session) -> None:
    done = subprocess.run(
        [*PROXY, "check", "1", "--db", str(session.db)], capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stdout.decode(errors="replace")
    assert b"0 errors" in done.stdout


def test_recorded_in_its_version_with_the_session_it_opened(session: Session) -> None:
    """codex-acp speaks v2 (``info`` and ``capabilities``, ``auth/login``, ``mcpServers``
    left out), the others v1: the capture says which, and its sessions view shows the one
    session the editor opened, in the editor's workspace."""
    rec = recorded(session.db, 1)
    assert rec.capture["protocol_version"] == session.agent.protocol
    done = subprocess.run([*PROXY, "show", "1", "--db", str(session.db), "--view", "sessions",
                           "--json"], capture_output=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    (opened,) = json.loads(done.stdout)
    assert opened["sessionId"] == session.session_id
    assert opened["cwd"] == str(session.box.workspace)
    assert opened["parentSessionId"] is None and opened["children"] == []
    if session.agent.protocol == 2:
        assert opened["configOptions"]  # codex-acp offers its model and reasoning options
        assert b'"method":"_auth/status_update"' in rec.a2c.replace(b" ", b"")


def test_no_process_is_left_once_the_session_is_over(session: Session) -> None:
    assert session.left == [], "\n".join(map(str, session.left))


def test_replay_client_reruns_it_without_divergence(session: Session, tmp_path: Path) -> None:
    box = sandbox(tmp_path)  # a fresh home and workspace: the run must not lean on the first
    argv = [*PROXY, "replay", "client", "1", "--db", str(session.db), "--cwd", str(box.workspace)]
    try:
        run = subprocess.run(
            [*argv, "--", *session.agent.command()],
            env=box.env,
            cwd=box.workspace,
            capture_output=True,
            timeout=REPLAY_BOUND,
        )
    finally:
        # what the run started ends with it: the guard, say, within moments
        left = ptree.wait_gone(ptree.marked(box.marker), 5)
        ptree.kill_marked(box.marker)
    report = run.stdout.decode(errors="replace")
    assert run.returncode == 0, report + run.stderr.decode(errors="replace")[-2000:]
    assert "no divergence" in report
    assert left == [], "\n".join(map(str, left))


def test_the_ws_bridge_client_saw_exactly_what_was_recorded(
    agent: RealPeer, box: Sandbox, tmp_path: Path
) -> None:
    db = tmp_path / "rec.sqlite"
    argv = [*PROXY, "ws", "--db", str(db), "--listen", "127.0.0.1:0", "--", *agent.command()]
    with listening(argv, env=box.env, cwd=box.workspace, stderr=tmp_path / "ws.stderr") as (
        proxy,
        url,
    ):
        with WsWire(f"{url}/acp") as wire:
            editor = Editor(wire)
            prompt_fails(editor, agent, open_session(editor, agent, box.workspace))
        wait_ended(db, 1)
        proxy.send_signal(signal.SIGINT)
        assert proxy.wait(30) == 0
    wait_recorded(db, 60)
    rec = recorded(db, 1)
    assert [(op, raw) for d, op, raw in rec.frames if d is A2C] == wire.received
    assert [(op, raw) for d, op, raw in rec.frames if d is C2A] == wire.sent
    assert rec.capture["exit_code"] == 0
    left = ptree.wait_gone(ptree.marked(box.marker), 5)
    assert left == [], "\n".join(map(str, left))


@pytest.fixture(params=AGENTS, ids=lambda a: a.name)
def agent(request: pytest.FixtureRequest) -> RealPeer:
    peer: RealPeer = request.param
    require(peer)
    return peer


@pytest.fixture
def box(tmp_path: Path) -> Iterator[Sandbox]:
    """A sandbox whose every process is killed when the test ends, pass or fail."""
    box = sandbox(tmp_path / "box")
    try:
        yield box
    finally:
        ptree.kill_marked(box.marker)


_KILLS = [
    *[(a, "record", s) for a in AGENTS for s in (signal.SIGTERM, signal.SIGKILL)],
    (AGENTS[0], "ws", signal.SIGTERM),
]


@pytest.mark.parametrize(
    ("agent", "how", "sig"),
    _KILLS,
    ids=[f"{a.name}-{how}-{s.name}" for a, how, s in _KILLS],
    indirect=["agent"],
)
def test_killing_the_proxy_leaves_no_process_of_the_agent(
    agent: RealPeer, box: Sandbox, tmp_path: Path, how: str, sig: signal.Signals
) -> None:
    """The editor still holds its end; the proxy is killed mid-session, once the agent's
    whole tree is up (npm launchers start a second node or a native binary below it).
    Each agent's tree under ``record``, by the editor's SIGTERM and by SIGKILL; under
    ``ws``, which ends its agents as ``record`` does, the deepest tree (codex-acp's native
    binary below its node launcher)."""
    db, err = tmp_path / "rec.sqlite", tmp_path / "proxy.stderr"
    grace = ["--grace", "1"]
    if how == "record":
        with StdioWire(
            [*PROXY, "record", "--db", str(db), *grace, "--", *agent.command()],
            env=box.env,
            cwd=box.workspace,
            stderr=err,
        ) as wire:
            open_session(Editor(wire), agent, box.workspace)
            _kill_and_check(wire.proc, sig)
        return
    argv = [*PROXY, "ws", "--db", str(db), *grace, "--listen", "127.0.0.1:0", "--"]
    with (
        listening([*argv, *agent.command()], env=box.env, cwd=box.workspace, stderr=err) as (
            proxy,
            url,
        ),
        WsWire(f"{url}/acp") as wire,
    ):
        open_session(Editor(wire), agent, box.workspace)
        _kill_and_check(proxy, sig)


def _kill_and_check(proxy: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    """After SIGTERM the proxy ends its agent's whole tree before it exits itself, so what
    runs once it has gone was orphaned (a moment is allowed for signals in flight). After
    SIGKILL it can do nothing: the tree must still be gone within ``KILL_BOUND``."""
    tree = [p for p in ptree.below(proxy.pid) if "acp_proxy.record.child" not in p.argv]
    assert tree, "the agent is not running below the proxy"
    proxy.send_signal(sig)
    try:
        proxy.wait(KILL_BOUND)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the proxy still runs {KILL_BOUND} s after {sig.name}") from None
    bound = SIGNALS_IN_FLIGHT if sig is signal.SIGTERM else KILL_BOUND
    left = ptree.wait_gone(tree, bound)
    what = "once the proxy had exited" if sig is signal.SIGTERM else f"{bound} s after SIGKILL"
    assert left == [], f"still running {what}:\n" + "\n".join(map(str, left))

"""The agent's process tree ends with the proxy, however the proxy ends (docs/reliability.md).

The agent here is shaped like an npm launcher (tests/peers/launcher_agent.py): a wrapper
and the program it starts below it, in the agent's process group. Without the proxy, an
editor's SIGTERM or SIGKILL ends the agent; with it, the same must happen to the agent and
everything in its group, within a second or two, and nothing may be left running.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.proc import PROXY, db_rows, peer, wait_recorded


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its parent does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"


def wait_for(predicate: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"after {timeout} s: {what}")
        time.sleep(0.02)


def read_pids(path: Path) -> tuple[int, int]:
    wait_for(path.exists, 20, "the launcher never started its child")
    launcher, child = path.read_text().split()
    return int(launcher), int(child)


class Tree:
    """A proxy running the launcher agent, and the pids of the tree it started."""

    def __init__(self, tmp: Path, db: Path, *opts: str, child_log: Path | None = None) -> None:
        self.pids_file = tmp / "pids"
        child = peer("native_child.py", *([str(child_log)] if child_log else []))
        agent = peer("launcher_agent.py", "--pids", str(self.pids_file), *opts, "--", *child)
        self.proxy = subprocess.Popen(
            [*PROXY, "record", "--db", str(db), "--grace", "0.2", "--", *agent],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert self.proxy.stdout is not None
        self.launcher, self.child = read_pids(self.pids_file)
        assert self.proxy.stdout.readline() == b"ready\n"  # relayed from the child

    def cleanup(self) -> None:
        for pid in (self.launcher, self.child):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        if self.proxy.poll() is None:
            self.proxy.kill()
        self.proxy.wait(timeout=10)
        for pipe in (self.proxy.stdin, self.proxy.stdout, self.proxy.stderr):
            if pipe is not None:
                pipe.close()


@pytest.fixture
def tree_of(tmp_path: Path, db: Path) -> Iterator[object]:
    made: list[Tree] = []

    def make(*opts: str, child_log: Path | None = None) -> Tree:
        made.append(Tree(tmp_path, db, *opts, child_log=child_log))
        return made[-1]

    yield make
    for t in made:
        t.cleanup()


def terminations(db: Path) -> list[dict[str, object]]:
    wait_recorded(db)
    rows = db_rows(db, "SELECT detail FROM events WHERE kind = 'terminate' ORDER BY id")
    return [json.loads(str(d)) for (d,) in rows]


def test_sigkill_of_the_proxy_kills_the_agent_and_what_it_started(tree_of: object) -> None:
    tree = tree_of()  # type: ignore[operator]
    tree.proxy.send_signal(signal.SIGKILL)
    tree.proxy.wait(timeout=10)
    wait_for(lambda: not alive(tree.launcher) and not alive(tree.child), 5,
             "the agent's tree outlived a SIGKILL of the proxy")  # fmt: skip


def test_sigterm_of_the_proxy_reaches_every_process_of_the_agent(
    tree_of: object, tmp_path: Path
) -> None:
    log = tmp_path / "signals"
    tree = tree_of("--log", str(log), child_log=log)  # type: ignore[operator]
    tree.proxy.send_signal(signal.SIGTERM)
    assert tree.proxy.wait(timeout=20) == 143  # the launcher's own death by SIGTERM
    wait_for(lambda: not alive(tree.child), 5, "the launcher's child outlived SIGTERM")
    assert sorted(log.read_text().splitlines()) == ["child SIGTERM", "launcher SIGTERM"]


def test_sigkill_after_sigterm_ends_an_agent_that_ignores_sigterm(tree_of: object) -> None:
    """An editor's usual sequence (SIGTERM, then SIGKILL a moment later) on an agent that
    ignores SIGTERM: the SIGKILL reaches the whole tree."""
    tree = tree_of("--stubborn")  # type: ignore[operator]
    tree.proxy.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    assert alive(tree.child)  # SIGTERM was forwarded and ignored, as without the proxy
    tree.proxy.send_signal(signal.SIGKILL)
    tree.proxy.wait(timeout=10)
    wait_for(lambda: not alive(tree.launcher) and not alive(tree.child), 5,
             "the agent's tree outlived SIGTERM then SIGKILL of the proxy")  # fmt: skip


def test_the_editor_closing_stdin_ends_a_tree_that_ignores_it(tree_of: object, db: Path) -> None:
    tree = tree_of("--stubborn")  # type: ignore[operator]
    assert tree.proxy.stdin is not None
    tree.proxy.stdin.close()
    code = tree.proxy.wait(timeout=20)
    assert not alive(tree.launcher) and not alive(tree.child)
    assert code == 128 + signal.SIGTERM  # the launcher obeyed SIGTERM; its child needed more
    sent = [(t["signal"], t.get("group")) for t in terminations(db)]
    assert ("SIGTERM", None) in sent
    assert ("SIGKILL", tree.launcher) in sent  # what was left in the group, by name


def test_what_an_agent_leaves_in_its_group_is_ended_when_it_exits(
    tree_of: object, db: Path
) -> None:
    tree = tree_of("--exit-now")  # type: ignore[operator]
    assert tree.proxy.wait(timeout=20) == 0  # the agent's own exit code
    assert not alive(tree.child)
    left = [t for t in terminations(db) if t.get("group") == tree.launcher]
    assert [t["signal"] for t in left] == ["SIGTERM"]
    assert left[0]["pids"] == [tree.child]


def test_sigkill_of_a_websocket_listener_kills_each_clients_agent(tmp_path: Path, db: Path) -> None:
    """`acp-proxy ws -- AGENT` starts an agent per client: all of them end with it."""
    from websockets.sync.client import connect

    pids = tmp_path / "pids"
    agent = peer("launcher_agent.py", "--pids", str(pids), "--", *peer("native_child.py"))
    proc = subprocess.Popen(
        [*PROXY, "ws", "--db", str(db), "--listen", "127.0.0.1:0", "--", *agent],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline().decode()
        url = line.split("listening on ", 1)[1].split(" ", 1)[0]
        with connect(url + "/acp", open_timeout=20) as ws:
            assert ws.recv(timeout=20) == "ready"  # from the child, below the launcher
            launcher, child = read_pids(pids)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
        wait_for(lambda: not alive(launcher) and not alive(child), 5,
                 "a client's agent outlived a SIGKILL of the listener")  # fmt: skip
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        assert proc.stderr is not None
        proc.stderr.close()
        if pids.exists():
            for pid in map(int, pids.read_text().split()):
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)

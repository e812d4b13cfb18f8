"""The guard (acp_proxy.transports.guard): the groups we watch die with us, the ones we
gave back do not, and a guard killed on its own is replaced."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from acp_proxy.transports.guard import Guard

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"


def wait_gone(pid: int, timeout: float = 5) -> bool:
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


OWNER = textwrap.dedent(
    """
    import os, subprocess, sys
    from acp_proxy.transports.guard import guard
    cmd = [sys.executable, "-c", "import time; time.sleep(60)"]
    kept = subprocess.Popen(cmd, process_group=0)
    given_back = subprocess.Popen(cmd, process_group=0)
    guard.watch(kept.pid)
    guard.watch(given_back.pid)
    guard.release(given_back.pid)
    print(kept.pid, given_back.pid, guard.pid, flush=True)
    sys.stdin.read()  # until the test kills us
    """
)


def test_a_process_killed_with_sigkill_takes_its_watched_groups_along() -> None:
    owner = subprocess.Popen([sys.executable, "-c", OWNER], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert owner.stdout is not None
    kept, given_back, guard_pid = map(int, owner.stdout.readline().split())
    try:
        assert alive(kept) and alive(given_back) and alive(guard_pid)
        owner.send_signal(signal.SIGKILL)
        owner.wait(timeout=10)
        assert wait_gone(kept), "a watched group outlived its owner"
        assert wait_gone(guard_pid), "the guard outlived its owner"
        assert alive(given_back)  # given back: none of the guard's business any more
    finally:
        for pid in (kept, given_back):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        owner.kill()
        owner.wait(timeout=10)
        assert owner.stdin is not None and owner.stdout is not None
        owner.stdin.close()
        owner.stdout.close()


def test_a_guard_killed_on_its_own_is_replaced_and_told_every_group() -> None:
    guard = Guard()
    sleeper = subprocess.Popen(SLEEPER, process_group=0)
    try:
        guard.watch(sleeper.pid)
        first = guard.pid
        assert first is not None
        os.kill(first, signal.SIGKILL)
        assert wait_gone(first)
        guard.release(os.getpid())  # the write that finds the old guard gone
        assert guard.pid not in (None, first)
        assert alive(sleeper.pid)
        os.close(guard._fd)  # as if we had died: the new guard must know the sleeper
        assert wait_gone(sleeper.pid), "the replacing guard was not told of the group"
    finally:
        sleeper.kill()
        sleeper.wait(timeout=10)
        if guard.pid is not None:
            os.kill(guard.pid, signal.SIGKILL)

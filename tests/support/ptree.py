"""The processes a test started, found again: by a marker in their environment (every
process below the one the test spawned inherits it, whoever its parent is by now) or by
walking the tree below a pid. A process is its pid and its start time, so a reused pid is
never taken for the process that had it. Zombies are gone: they hold nothing but an exit
status.

No tests here; the test modules import it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

MARKER = "ACP_PROXY_TEST_TREE"
PROC = Path("/proc")


@dataclass(frozen=True)
class Proc:
    """One process: its pid, its start time (clock ticks after boot) and its command line."""

    pid: int
    start: int
    ppid: int
    argv: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.pid} {' '.join(self.argv)[:160]}"


def new_marker() -> str:
    """A value for ``MARKER`` that no other test run uses."""
    return uuid.uuid4().hex


def _read(pid: int) -> Proc | None:
    """The process ``pid``, or None when it is gone or a zombie."""
    try:
        stat = (PROC / str(pid) / "stat").read_text()
        argv = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # the name may hold spaces and parentheses
    if fields[0] in ("Z", "X"):
        return None
    words = tuple(w.decode(errors="replace") for w in argv.split(b"\0") if w)
    return Proc(pid, int(fields[19]), int(fields[1]), words)


def _all() -> list[Proc]:
    procs = (_read(int(e.name)) for e in PROC.iterdir() if e.name.isdigit())
    return [p for p in procs if p is not None]


def marked(marker: str) -> list[Proc]:
    """Every live process whose environment carries ``MARKER=marker``."""
    needle = f"{MARKER}={marker}".encode()
    found = []
    for p in _all():
        try:
            env = (PROC / str(p.pid) / "environ").read_bytes()
        except OSError:
            continue
        if needle in env.split(b"\0"):
            found.append(p)
    return found


def below(pid: int) -> list[Proc]:
    """Every live process under ``pid`` (children, their children, ...)."""
    procs = _all()
    found: list[Proc] = []
    parents = {pid}
    while True:
        more = [p for p in procs if p.ppid in parents and p not in found]
        if not more:
            return found
        found += more
        parents = {p.pid for p in more}


def alive(procs: list[Proc]) -> list[Proc]:
    """Those of ``procs`` that still run (the same pid with the same start time)."""
    now = ((p, _read(p.pid)) for p in procs)
    return [p for p, q in now if q is not None and q.start == p.start]


def wait_gone(procs: list[Proc], timeout: float) -> list[Proc]:
    """Wait up to ``timeout`` seconds for ``procs`` to end; those still running then."""
    deadline = time.monotonic() + timeout
    while (left := alive(procs)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def kill(procs: list[Proc]) -> None:
    """SIGKILL each of ``procs`` by its pid (only if it is still that process)."""
    for p in alive(procs):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p.pid, signal.SIGKILL)


def kill_marked(marker: str, timeout: float = 10) -> list[Proc]:
    """End every process carrying ``marker``, including those started while the first
    ones were being killed; those that were still running (so the test left them)."""
    left: list[Proc] = []
    deadline = time.monotonic() + timeout
    while (procs := marked(marker)) and time.monotonic() < deadline:
        left += [p for p in procs if p not in left]
        kill(procs)
        wait_gone(procs, 1)
    return left

"""Whether the processes that write a capture are still there.

What belongs here: a process's identity — its pid is reused, so the identity is the boot
and the time it started (Linux ``/proc``) — and the test readers use to tell a capture being
recorded from one whose relay and recorder are gone (killed): a capture never shows as
running once nobody can finish it.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

__all__ = ["alive", "capture_state", "identity"]

_BOOT: str | None = None


def _boot_id() -> str:
    global _BOOT
    if _BOOT is None:
        try:
            with open("/proc/sys/kernel/random/boot_id") as f:
                _BOOT = f.read().strip()
        except OSError:
            _BOOT = "?"
    return _BOOT


def identity(pid: int | None = None) -> str | None:
    """``boot:start`` of process ``pid`` (default: this one), or None where unknown."""
    pid = os.getpid() if pid is None else pid
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: fields after the last ')'
    fields = stat[stat.rfind(b")") + 2 :].split()
    try:
        start = int(fields[19])  # field 22 of stat: start time in clock ticks since boot
    except (IndexError, ValueError):
        return None
    return f"{_boot_id()}:{start}"


def alive(pid: int | None, ident: str | None) -> bool:
    """Whether process ``pid`` with identity ``ident`` is still running."""
    if not pid:
        return False
    if ident:
        return identity(pid) == ident
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, 0)
        return True
    return False


def capture_state(c: dict[str, Any]) -> str:
    """``recording`` (its relay is there), ``finishing`` (only its recorder is: it is
    writing what the relay sent before it exited), ``done`` (ended and written), or
    ``killed`` (neither is there and it was never finished)."""
    if c.get("finished_at") is not None:
        return "done"
    if alive(c.get("proxy_pid"), c.get("proxy_start")):
        return "recording" if c.get("ended_at") is None else "finishing"
    if alive(c.get("recorder_pid"), c.get("recorder_start")):
        return "finishing"
    if c.get("ended_at") is not None and c.get("proxy_start") is None:
        return "done"  # written by a release that did not track its processes
    return "killed"

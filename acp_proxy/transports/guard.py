"""The guard: the agents' process groups end with us, however we end.

What belongs here: a small process that outlives nothing of ours. Every agent runs as the
leader of a process group of its own (so a signal meant for it reaches what it started
too: an npm launcher's native binary, a shell's children). A relay that dies by SIGKILL
cannot pass anything on, so the first agent a process starts also starts the guard: a
child in a session of its own (a kill of our process group spares it), holding the read
end of a pipe whose write end only we hold. We tell it which groups are ours
(``+PGID``) and which have ended (``-PGID``); when the pipe ends — we exited, or were
killed by any signal — it sends SIGKILL to every group still ours and exits. SIGKILL is
what an editor that kills its agent's process means, and a process killed that way had no
chance to say anything gentler.

A group is given back (``-PGID``) only once no process of it is left, so the guard never
signals a group number the system may have handed to someone else. The guard is plain
Python with no import of ours beyond this module, reads nothing but its pipe and holds
no descriptor of the editor's.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading

__all__ = ["Guard", "guard", "main"]


class Guard:
    """Our side of the guard process: started at the first :meth:`watch`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fd = -1
        self._proc: subprocess.Popen[bytes] | None = None
        self._failed = False
        self._groups: set[int] = set()  # told to a guard that replaces a dead one

    def watch(self, pgid: int) -> None:
        """From now on, group ``pgid`` is killed if we end before :meth:`release`."""
        with self._lock:
            self._groups.add(pgid)
            self._say(f"+{pgid}\n")

    def release(self, pgid: int) -> None:
        """Group ``pgid`` has no process left: forget it."""
        with self._lock:
            self._groups.discard(pgid)
            self._say(f"-{pgid}\n")

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def _say(self, line: str) -> None:
        if self._fd < 0 and not self._failed:
            self._start()
        if self._fd < 0:
            return
        try:
            os.write(self._fd, line.encode())  # a few bytes: atomic on a pipe
        except OSError:  # the guard is gone (killed on its own): a new one takes over,
            self._restart()  # told every group still ours
            told = "".join(f"+{pgid}\n" for pgid in sorted(self._groups))
            with contextlib.suppress(OSError):
                os.write(self._fd, told.encode())

    def _start(self) -> None:
        r, w = os.pipe()  # both ends close on exec: no other child of ours inherits them
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "acp_proxy.transports.guard"],
                stdin=r,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                close_fds=True,
                start_new_session=True,
            )
        except OSError:
            os.close(w)
            self._failed = True  # agents still end with us on the usual paths
            return
        finally:
            os.close(r)
        self._fd = w

    def _restart(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)
        if self._proc is not None:
            self._proc.poll()  # reap the one that died
        self._fd = -1
        self._start()


guard = Guard()
"""The process's one guard."""


def main() -> int:
    """The guard process: read ``+PGID`` / ``-PGID`` lines until the pipe ends, then kill
    what is left."""
    for s in (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(s, signal.SIG_IGN)
    groups: set[int] = set()
    pending = b""
    while True:
        try:
            data = os.read(0, 4096)
        except InterruptedError:  # pragma: no cover - retried by Python itself
            continue
        except OSError:
            break
        if not data:
            break
        pending += data
        *lines, pending = pending.split(b"\n")
        for line in lines:
            _apply(groups, line)
    for pgid in groups:
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)
    return 0


def _apply(groups: set[int], line: bytes) -> None:
    try:
        pgid = int(line[1:])
    except ValueError:
        return
    if pgid <= 1:
        return  # never a group number we could have made
    if line[:1] == b"+":
        groups.add(pgid)
    elif line[:1] == b"-":
        groups.discard(pgid)


if __name__ == "__main__":
    raise SystemExit(main())

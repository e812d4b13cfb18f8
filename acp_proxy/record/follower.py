"""The search index kept up as frames are stored, beside the recorder.

What belongs here: :class:`Follower`, which indexes the frames, stderr and events the
recorder has committed into the index file beside the database (:mod:`acp_proxy.store.index`).
It writes only that file, so the recorder's commits never wait for it.

Once the recorder has committed :data:`START_AFTER` rows, the follower runs in a process of
its own (``python -m acp_proxy.record.follower DB``): indexing costs about as much CPU as
recording, and a thread of the recorder's process would take that from the recorder itself
(they share the interpreter: a flood of a million frames was recorded 40 % slower with a
thread, docs/performance.md), and at a lower priority (:data:`NICENESS`). The process
indexes what is committed in transactions of :data:`BATCH` rows, waits a little when it is
behind by little, and when its standard input closes — the recorder is done, or gone — it
indexes what is left and exits.

When the relay is gone the recorder calls :meth:`Follower.finish`: it waits for the process
(half of :data:`FINISH_S`, or of ``ACP_PROXY_INDEX_WAIT`` seconds) and indexes what it left
itself, or, for a capture too small to have started one, indexes the rows itself, within
the same bound. A capture just recorded is searchable at once; what is left (a loaded
machine) is topped up by the next search.
"""

from __future__ import annotations

import contextlib
import os
import select
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from acp_proxy.errors import ProxyError
from acp_proxy.settings import number
from acp_proxy.store.db import connect
from acp_proxy.store.index import catch_up

__all__ = [
    "BATCH",
    "FINISH_S",
    "INDEX_WAIT_ENV",
    "NICENESS",
    "START_AFTER",
    "Follower",
    "finish_s",
    "follow",
]

BATCH = 5000
"""Rows indexed in one transaction of the index file (its lock alone: the recorder never
waits for it). 5000 rows a transaction cost about two thirds of the CPU a row that 500 do."""
START_AFTER = 20_000
"""Rows committed before a process of its own is worth starting (a smaller capture is
indexed at its end, in well under a second)."""
_BEHIND_BY_LITTLE = 1000
"""Fewer rows than this indexed in a round: wait for more."""
_IDLE_S = 0.25
FINISH_S = 2.0
"""How long the recorder spends, at its end, bringing the index up to its last rows, unless
``ACP_PROXY_INDEX_WAIT`` says otherwise (:func:`finish_s`)."""
INDEX_WAIT_ENV = "ACP_PROXY_INDEX_WAIT"
_KILL_AFTER_S = 2.0
"""How long a follower told to stop has before it is killed."""


class Follower:
    """Keeps ``<db>.search`` up with what the recorder commits (:meth:`committed` after each
    commit, :meth:`finish` at the end, :meth:`close` always)."""

    def __init__(self, db_path: Path, finish_s: float = FINISH_S) -> None:
        self._db_path = db_path
        self._finish_s = finish_s
        self._rows = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self.error: str | None = None

    def committed(self, rows: int) -> None:
        """After a commit of ``rows`` rows: start the process once there are enough."""
        self._rows += rows
        if self._proc is None and self._rows >= START_AFTER and self.error is None:
            try:
                self._proc = subprocess.Popen(
                    [sys.executable, "-m", "acp_proxy.record.follower", str(self._db_path)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    close_fds=True,
                )
            except OSError as e:  # indexed at the end instead, or by the next search
                self.error = str(e)

    def finish(self) -> None:
        """Bring the index up to the last committed row, for about ``finish_s`` seconds
        (given at the start): the process has half of it to index what is left; what it
        has not done by then (on a loaded machine its lower priority leaves it little CPU)
        is indexed here, at the recorder's own priority, in the other half."""
        timeout = self._finish_s
        if self._proc is not None:
            proc, self._proc = self._proc, None
            _end(proc, timeout / 2)
            timeout /= 2
        _index(self._db_path, time.monotonic() + timeout)

    def close(self) -> None:
        """Stop the process without waiting for it to catch up (the recorder failed)."""
        if self._proc is not None:
            proc, self._proc = self._proc, None
            _end(proc, 0)


def finish_s() -> float:
    """The recorder's bound on indexing at its end: ``ACP_PROXY_INDEX_WAIT`` seconds, up to a
    day (a script that searches as soon as ``record`` exits, on a slow or loaded machine,
    may give it more; 0 leaves it all to the next search), else :data:`FINISH_S`."""
    return number(INDEX_WAIT_ENV, FINISH_S)


def _end(proc: subprocess.Popen[bytes], timeout: float) -> None:
    with contextlib.suppress(OSError):
        assert proc.stdin is not None
        proc.stdin.close()  # "the recorder is done": index what is left, then exit
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.terminate()  # its open transaction is rolled back; the next search goes on
        try:
            proc.wait(_KILL_AFTER_S)
        except subprocess.TimeoutExpired:  # every wait has a bound
            proc.kill()
            proc.wait()


def _index(db_path: Path, deadline: float) -> None:
    """Index what is committed until done or ``deadline``; errors leave it to a search."""
    try:
        conn = connect(db_path, create=False)
    except (ProxyError, sqlite3.Error):
        return
    try:
        while time.monotonic() < deadline and catch_up(conn, batch=BATCH, limit=BATCH):
            pass
    except (ProxyError, sqlite3.Error):
        pass
    finally:
        conn.close()


def follow(db_path: Path) -> int:
    """The follower process: index what the recorder commits until standard input closes,
    then what is left."""
    try:
        conn = connect(db_path, create=False)
    except (ProxyError, sqlite3.Error):
        return 1
    try:
        done = False
        while True:
            n = catch_up(conn, batch=BATCH, limit=BATCH)
            if done:
                if n == 0:
                    return 0
                continue
            wait = _IDLE_S if n < _BEHIND_BY_LITTLE else 0
            ready, _, _ = select.select([0], [], [], wait)
            done = bool(ready) and not os.read(0, 1 << 12)
    except (ProxyError, sqlite3.Error):  # the next search indexes what is left
        return 1
    finally:
        conn.close()


NICENESS = 10
"""How much lower the follower's scheduling priority is than the recorder's: where the two
want one core (a loaded machine), storing frames comes first and indexing waits."""


def main() -> int:
    """``python -m acp_proxy.record.follower DB``, started by :class:`Follower`."""
    with contextlib.suppress(OSError, AttributeError):  # a platform without nice: equal
        os.nice(NICENESS)
    return follow(Path(sys.argv[1]))


if __name__ == "__main__":
    raise SystemExit(main())

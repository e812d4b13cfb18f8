"""Checkpoints of the write-ahead log, run beside the recorder instead of inside its commits.

What belongs here: :class:`Checkpointer`, a thread with a connection of its own that copies
what the WAL holds into the database file (a ``PASSIVE`` checkpoint: it never waits for the
writer or a reader, and never holds the writer up) each time the recorder has committed about
:data:`EVERY_BYTES` more. By default SQLite runs that copy, and its ``fsync``, inside the
commit that crosses the WAL's size limit: the recorder stood still for it. A checkpoint is
one long call into SQLite that runs without the interpreter lock, so on a second core it
overlaps the recorder's own work (docs/performance.md). The recorder's connection has its
automatic checkpoints turned off while this runs; closing the last connection still
checkpoints whatever is left, as SQLite always does.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from pathlib import Path

__all__ = ["EVERY_BYTES", "Checkpointer", "beside"]

EVERY_BYTES = 32 * 1024 * 1024


class Checkpointer:
    """Copies the WAL of ``db_path`` into the database as commits add to it (:meth:`progress`)."""

    def __init__(self, db_path: Path, every: int = EVERY_BYTES) -> None:
        self._every = every
        self._conn = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
        self._wake = threading.Event()
        self._stop = False
        self._asked_at = 0  # the bytes committed when a checkpoint was last asked for
        self.done = 0  # checkpoints run
        self._thread = threading.Thread(target=self._run, name="acp-proxy-checkpoint", daemon=True)
        self._thread.start()

    def progress(self, committed: int) -> None:
        """After a commit, with about how many bytes were committed in all: ask for a
        checkpoint once enough more were since the last one was asked for."""
        if committed - self._asked_at >= self._every:
            self._asked_at = committed
            self._wake.set()

    def close(self) -> None:
        self._stop = True
        self._wake.set()
        self._thread.join()
        with contextlib.suppress(sqlite3.Error):
            self._conn.close()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._stop:
                return
            # busy or locked: the next one will do it; the WAL keeps everything meanwhile
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
                self.done += 1


def beside(db_path: Path, conn: sqlite3.Connection) -> Checkpointer | None:
    """Checkpoints of ``db_path`` beside the writer ``conn`` instead of in its commits
    (whose automatic ones are turned off); None — SQLite's own, in the commits — when the
    checkpointer's connection cannot open."""
    try:
        checkpointer = Checkpointer(db_path)
    except sqlite3.Error:
        return None
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    return checkpointer

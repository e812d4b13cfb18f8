"""The search index kept up as frames are stored: a thread beside the recorder.

What belongs here: :class:`Follower`, a thread with a connection of its own that indexes
the frames, stderr and events the recorder has committed since the last indexed row into
the index file beside the database (:mod:`acp_proxy.store.index`). It writes only that
file, so the recorder's commits never wait for it; it yields to the recorder — small
batches, and a pause while it is behind by little — since both share the interpreter.
When the relay is gone the recorder asks it to finish (:meth:`Follower.finish`): it then
indexes what is left without pausing, for a bounded time, so a capture just recorded is
searchable at once. What it leaves is topped up by the next search.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from pathlib import Path

from acp_proxy.errors import ProxyError
from acp_proxy.store.db import connect
from acp_proxy.store.index import catch_up

__all__ = ["BATCH", "FINISH_S", "Follower"]

BATCH = 500
"""Rows indexed in one transaction of the index file."""
_ROUND = 4 * BATCH
"""Rows indexed between two pauses while the recorder is busy."""
_BEHIND_BY_LITTLE = 2 * BATCH
"""Fewer rows than this left: wait for more rather than index them one batch at a time."""
_IDLE_S = 0.25
_YIELD_S = 0.002
FINISH_S = 2.0
"""How long the recorder waits, at its end, for the index to reach its last rows."""


class Follower:
    """Indexes what the recorder commits into ``<db>.search`` (:meth:`finish` at the end)."""

    def __init__(self, db_path: Path) -> None:
        self._db_path = db_path
        self._stop = threading.Event()
        self._finishing = threading.Event()
        self._wake = threading.Event()
        self.indexed = 0  # rows indexed
        self.error: str | None = None
        self._thread = threading.Thread(target=self._run, name="acp-proxy-follower", daemon=True)
        self._thread.start()

    def finish(self, timeout: float = FINISH_S) -> None:
        """Index what is left, for at most ``timeout`` seconds, then stop."""
        self._finishing.set()
        self._wake.set()
        self._thread.join(timeout)
        self.close()

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join()

    def _run(self) -> None:
        try:
            conn = connect(self._db_path, create=False)
        except (ProxyError, sqlite3.Error) as e:
            self.error = str(e)
            return
        try:
            self._follow(conn)
        except (ProxyError, sqlite3.Error) as e:  # the next search indexes what is left
            self.error = str(e)
        finally:
            with contextlib.suppress(sqlite3.Error):
                conn.close()

    def _follow(self, conn: sqlite3.Connection) -> None:
        while not self._stop.is_set():
            if self._finishing.is_set():
                n = catch_up(conn, batch=BATCH, limit=_ROUND)
                self.indexed += n
                if n == 0:
                    return
                continue
            n = catch_up(conn, batch=BATCH, limit=_ROUND)
            self.indexed += n
            if n >= _BEHIND_BY_LITTLE:
                time.sleep(_YIELD_S)  # the recorder first: it has a relay to keep up with
            else:
                self._wake.wait(_IDLE_S)
                self._wake.clear()

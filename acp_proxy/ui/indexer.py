"""The web inspector's one write: keeping the search index current.

What belongs here: :class:`Indexer`, the thread that brings the search index of the
recordings database up to date every half second in short write transactions, and says
why when it cannot (the views go on reading without it).
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from acp_proxy.errors import ProxyError
from acp_proxy.store.db import connect, migrate
from acp_proxy.store.index import catch_up, pending

__all__ = ["Indexer"]


class Indexer(threading.Thread):
    """Keeps the search index current: every half second, the frames, stderr and events
    recorded since, in write transactions of at most 500 rows (tens of milliseconds)."""

    def __init__(self, db: Path, stop: threading.Event) -> None:
        super().__init__(name="acp-proxy-ui-indexer", daemon=True)
        self.db = db
        self.stop = stop
        self.error: str | None = None
        self.wake = threading.Event()

    def run(self) -> None:
        try:
            conn = connect(self.db, create=False)
            migrate(conn)
        except (ProxyError, sqlite3.Error) as e:
            self.error = f"search index not updated: {e}"
            return
        try:
            while not self.stop.is_set():
                try:
                    catch_up(conn, batch=500, limit=20000)
                    self.error = None
                except sqlite3.Error as e:
                    self.error = f"search index not updated: {e}"
                if pending(conn) == 0:
                    self.wake.wait(0.5)
                    self.wake.clear()
        finally:
            conn.close()

"""Deleting captures: ``acp-proxy rm`` and ``acp-proxy prune``.

What belongs here: removing a capture and everything recorded for it — its frames, batch
entries, stderr, events, and the rows of any table with a ``capture_id`` column (so a table a
later migration adds is covered too) — while recorders keep writing to the same database.
Each transaction deletes at most :data:`CHUNK` rows, so a recorder never waits long for the
write lock; a busy database is retried (the connection's busy timeout). A capture that is
still being recorded is never deleted: its recorder would go on writing rows for it.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from acp_proxy.errors import StoreError, UsageError
from acp_proxy.store.index import lower_upto, unindex_capture

__all__ = ["CHUNK", "capture_tables", "delete_capture", "older_than", "vacuum"]

CHUNK = 2000
_RETRIES = 50


def capture_tables(conn: sqlite3.Connection) -> list[str]:
    """Every table with a ``capture_id`` column, children before ``captures``."""
    names = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name"
        )
    ]
    return [
        n
        for n in names
        if any(col[1] == "capture_id" for col in conn.execute(f'PRAGMA table_info("{n}")'))
    ]


def _write(conn: sqlite3.Connection, sql: str, args: list[Any]) -> int:
    """One short write transaction; retried while another writer holds the lock."""
    for attempt in range(_RETRIES):
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) and "busy" not in str(e):
                raise StoreError(f"cannot delete: {e}") from e
            time.sleep(min(0.05 * (attempt + 1), 1.0))
            continue
        try:
            n = conn.execute(sql, args).rowcount
            conn.execute("COMMIT")
            return int(n)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    raise StoreError("the database stayed busy (a recorder holds the write lock); try again")


def delete_capture(
    conn: sqlite3.Connection, capture_id: int, progress: Callable[[int], None] | None = None
) -> int:
    """Delete one capture and every row recorded for it; the number of frames it had.
    Its rows leave the search index first (no stale hit points at a row reusing an id)."""
    try:
        unindex_capture(conn, capture_id)
    except sqlite3.Error as e:
        raise StoreError(f"cannot take capture {capture_id} out of the search index: {e}") from e
    frames = 0
    for table in capture_tables(conn):
        key = "rowid"
        while True:
            n = _write(
                conn,
                f'DELETE FROM "{table}" WHERE {key} IN (SELECT {key} FROM "{table}" '
                f"WHERE capture_id = ? LIMIT {CHUNK})",
                [capture_id],
            )
            if table == "messages":
                frames += n
                if progress is not None and n:
                    progress(n)
            if n < CHUNK:
                break
    _write(conn, "DELETE FROM captures WHERE id = ?", [capture_id])
    try:
        lower_upto(conn)
    except sqlite3.Error as e:
        raise StoreError(f"cannot update the search index: {e}") from e
    return frames


def older_than(text: str) -> datetime:
    """``30d``, ``12h``, ``2w``, ``90m``: the UTC time that long ago (:class:`UsageError` for
    anything else, or an age before the year 1)."""
    units = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
    value, unit = text[:-1], text[-1:]
    if unit not in units or not (value.isascii() and value.isdigit()):
        raise UsageError(f"--older-than wants an age such as 30d, 12h, 2w, 90m, not {text!r}")
    try:
        return datetime.now(UTC) - timedelta(**{units[unit]: int(value)})
    except (OverflowError, ValueError):  # before year 1 (or more digits than int() reads)
        raise UsageError(f"--older-than {text[:40]!r} is further back than a date goes") from None


def vacuum(conn: sqlite3.Connection) -> None:
    """Give the freed pages back to the file system (waits for the write lock)."""
    for attempt in range(_RETRIES):
        try:
            conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) and "busy" not in str(e):
                raise StoreError(f"cannot vacuum: {e}") from e
            time.sleep(min(0.1 * (attempt + 1), 1.0))
    raise StoreError("the database stayed busy; VACUUM not done, try again")

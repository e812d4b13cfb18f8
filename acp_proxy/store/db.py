"""Where the recordings database lives and how it is opened.

What belongs here: the default path, opening a database safely (0600, WAL, busy timeout)
and the numbered migrations of ``schema.sql``. Reading is :mod:`acp_proxy.store.reader`;
writing frames is the recorder's job (:mod:`acp_proxy.record`).
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
from collections.abc import Iterator
from datetime import datetime
from importlib import resources
from pathlib import Path

from acp_proxy import settings
from acp_proxy.errors import SchemaError, StoreError
from acp_proxy.store.private import make_private_dirs, refusal

__all__ = [
    "BUSY_TIMEOUT_MS",
    "connect",
    "default_db_path",
    "migrate",
    "now_iso",
    "schema_migrations",
]

BUSY_TIMEOUT_MS = int(
    settings.number("ACP_PROXY_BUSY_TIMEOUT_MS", 10_000, most=settings.DAY_S * 1000, integer=True)
)
# The page size of a new database (SQLite's largest). Frames are mostly a few hundred bytes
# to a few KB: with the default 4 KiB pages a 4 KB frame spills onto an overflow page of its
# own, and each page is a unit of work for the recorder's inserts and for checkpoints. With
# 64 KiB pages the recorder took 4 KB frames at about 1.4 times the rate; 200 B frames
# moved within the noise (docs/performance.md). A database made before keeps its own.
PAGE_SIZE = 65536


def now_iso() -> str:
    """Wall-clock time as the database stores it: UTC, milliseconds, a ``Z``."""
    from datetime import UTC

    return _iso(datetime.now(UTC))


def iso_after(start: object, ns: int) -> str | None:
    """The wall-clock time ``ns`` nanoseconds after ``start`` (a time as the database
    stores it), stored alike; None when ``start`` is not such a time."""
    from datetime import timedelta

    if not isinstance(start, str):
        return None
    try:
        when = datetime.fromisoformat(start.replace("Z", "+00:00"))
    except ValueError:
        return None
    return _iso(when + timedelta(microseconds=ns // 1000))


def _iso(when: datetime) -> str:
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def default_db_path() -> Path:
    """``$ACP_PROXY_DB``, else ``$XDG_STATE_HOME/acp-proxy/recordings.sqlite``."""
    env = os.environ.get("ACP_PROXY_DB")
    if env:
        return Path(env).expanduser()
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(state) / "acp-proxy" / "recordings.sqlite"


def schema_migrations() -> list[tuple[int, str]]:
    """The numbered migrations of ``schema.sql``, in order."""
    text = resources.files("acp_proxy.store").joinpath("schema.sql").read_text(encoding="utf-8")
    parts = re.split(r"^-- migration: (\d+)\s*$", text, flags=re.MULTILINE)
    return [(int(parts[i]), parts[i + 1]) for i in range(1, len(parts), 2)]


def connect(path: Path, *, create: bool = True, readonly: bool = False) -> sqlite3.Connection:
    """Open ``path`` with the settings every connection shares.

    A new file is created with mode 0600 (recordings hold secrets; docs/design.md principle 6)
    in directories created 0700; an existing one that is not private to us is refused
    (:func:`acp_proxy.store.private.refusal`).
    """
    path = Path(path)
    if readonly:
        if not path.exists():
            raise StoreError(f"no recordings database at {path}")
        _check_private(path)
        try:
            conn = sqlite3.connect(
                f"file:{path}?mode=ro", uri=True, check_same_thread=False, isolation_level=None
            )
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("SELECT 1 FROM sqlite_master LIMIT 1")
        except sqlite3.Error as e:
            raise StoreError(f"cannot read recordings database {path}: {e}") from e
        return conn
    if create and not path.exists():
        try:
            make_private_dirs(path.parent)
            fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
            os.close(fd)
        except OSError as e:
            raise StoreError(f"cannot create recordings database {path}: {e.strerror}") from e
    _check_private(path)
    try:
        conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if path.stat().st_size == 0:  # new: its page size can still be chosen
            conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        if mode != "wal":
            # a read-only file keeps its mode; writes will fail and spill
            with contextlib.suppress(sqlite3.OperationalError):
                conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    except sqlite3.Error as e:
        raise StoreError(f"cannot open recordings database {path}: {e}") from e
    return conn


def _check_private(path: Path) -> None:
    problem = refusal(path)
    if problem is not None:
        raise StoreError(f"refusing the recordings database: {problem}")


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the schema up to date; returns the version reached."""
    try:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, applied_at TEXT)"
        )
        row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    except sqlite3.DatabaseError as e:
        raise StoreError(f"not a recordings database: {e}") from e
    current = row[0] or 0
    migrations = schema_migrations()
    latest = migrations[-1][0]
    if current > latest:
        raise SchemaError(
            f"database schema version {current} is newer than this acp-proxy knows ({latest})"
        )
    for number, sql in migrations:
        if number <= current:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            again = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] or 0
            if again < number:  # another process may have migrated meanwhile
                for statement in _statements(sql):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_version VALUES (?, strftime('%Y-%m-%dT%H:%M:%fZ'))",
                    (number,),
                )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return latest


def _statements(sql: str) -> Iterator[str]:
    buf = ""
    for line in sql.splitlines(keepends=True):
        if line.lstrip().startswith("--") and not buf.strip():
            continue
        buf += line
        if sqlite3.complete_statement(buf):
            yield buf
            buf = ""

"""The search index's file: where it is, making it, and attaching it to a connection.

What belongs here: the index file beside a database, ``<db>.search`` (:func:`search_path`;
mode 0600, refused like the database when others can read it), made whole before anyone
can open it (:func:`_create`), and attached to a connection as the schema ``search``
(:func:`attach`) once it is known to be this database's index, of this format: a file of
another format (its rows went in with other text) or of another database (one deleted and
made again beside it, or copied over it: its rows name other frames) is set aside and
made again. What goes into it is :mod:`acp_proxy.store.index`.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from pathlib import Path

from acp_proxy.errors import StoreError
from acp_proxy.store.private import refusal

__all__ = ["FORMAT", "SCHEMA", "attach", "index_tables", "search_path"]

SCHEMA = "search"
"""The name the index file is attached under."""
FORMAT = 1
"""The index file's ``user_version``: the text its rows went in with. A row of a contentless
index is taken out with that very text, so a file of another format is made again."""
_TABLES = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS search.frames_fts USING fts5("
    "text, content = '', columnsize = 0, tokenize = 'unicode61 remove_diacritics 2')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS search.notes_fts USING fts5("
    "text, content = '', columnsize = 0, tokenize = 'unicode61 remove_diacritics 2')",
    "CREATE TABLE IF NOT EXISTS search.search_index (name TEXT PRIMARY KEY, upto INTEGER NOT NULL)",
    "INSERT OR IGNORE INTO search.search_index VALUES ('frames', 0), ('stderr', 0), ('events', 0)",
    "CREATE TABLE IF NOT EXISTS search.owner (token TEXT NOT NULL)",
)


def index_tables() -> tuple[str, ...]:
    """The statements that make the index file's tables, in the schema ``search``."""
    return _TABLES


def search_path(db: Path) -> Path:
    """The index file of the database ``db``: ``<db>.search`` beside it."""
    return db.with_name(db.name + ".search")


def _main_path(conn: sqlite3.Connection) -> Path | None:
    for _, name, file in conn.execute("PRAGMA database_list"):
        if name == "main":
            return Path(file) if file else None
    return None


def _attached(conn: sqlite3.Connection) -> bool:
    return any(row[1] == SCHEMA for row in conn.execute("PRAGMA database_list"))


def attach(conn: sqlite3.Connection, *, create: bool = False) -> bool:
    """Attach the index file of ``conn``'s database as ``search``; whether it is attached.

    Without ``create``, a database never indexed has no file and nothing is attached. With
    it, the file is made (0600) and its tables too. A file others can read or write is
    refused (:class:`StoreError`), as the database is. Not inside a transaction."""
    if _attached(conn):
        return True
    db = _main_path(conn)
    if db is None:
        return False
    path = search_path(db)
    if not path.exists():
        if not create:
            return False
        _create(path)
    problem = refusal(path)
    if problem is not None:
        raise StoreError(f"refusing the search index: {problem}")
    conn.execute(f"ATTACH DATABASE ? AS {SCHEMA}", [str(path)])
    (found,) = conn.execute(f"PRAGMA {SCHEMA}.user_version").fetchone()
    # indexed with other text (its rows could not be taken out), or another database's
    # index (its rows name other frames): made again
    if found != FORMAT or not _owned(conn):
        conn.execute(f"DETACH DATABASE {SCHEMA}")
        _set_aside(path)
        return attach(conn, create=create)
    conn.execute(f"PRAGMA {SCHEMA}.synchronous = NORMAL")  # as the database's (WAL)
    return True


def _owned(conn: sqlite3.Connection) -> bool:
    """Whether the attached index is this database's (their ``identity`` tokens agree). An
    index that names none yet — new, or made before databases had a token — becomes this
    database's; so does everything where a token cannot be read (a database from before
    migration 8, read as it is)."""
    try:
        mine = conn.execute("SELECT token FROM main.identity").fetchone()
    except sqlite3.OperationalError:
        return True
    try:
        owner = conn.execute(f"SELECT token FROM {SCHEMA}.owner").fetchone()
    except sqlite3.OperationalError:  # an index file made before it named its database
        owner = None
    if mine is None:
        return True
    if owner is not None:
        return bool(owner[0] == mine[0])
    with contextlib.suppress(sqlite3.Error):  # read-only here: the next writer names it
        conn.execute(f"CREATE TABLE IF NOT EXISTS {SCHEMA}.owner (token TEXT NOT NULL)")
        conn.execute(
            f"INSERT INTO {SCHEMA}.owner SELECT ? WHERE NOT EXISTS (SELECT 1 FROM {SCHEMA}.owner)",
            [mine[0]],
        )
    return True


def _set_aside(path: Path) -> None:
    """An index file of another format or database out of the way (one still writing it
    writes to a file no one reads); the next search makes a new one."""
    aside = path.with_name(f"{path.name}.{os.getpid()}.old")
    with contextlib.suppress(FileNotFoundError):
        os.replace(path, aside)
    for leftover in (aside, Path(f"{path}-wal"), Path(f"{path}-shm")):  # a new file's names
        with contextlib.suppress(OSError):
            leftover.unlink()


def _create(path: Path) -> None:
    """A new index file at ``path`` (0600, WAL), its tables made beside it first and the
    whole file linked into place: a reader never finds it without its tables, and of
    several processes making it at once one wins and the others use its file."""
    part = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.new")
    try:
        os.close(os.open(part, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        own = sqlite3.connect(part, isolation_level=None)
        try:
            own.execute("PRAGMA journal_mode = WAL")
            for sql in index_tables():
                own.execute(sql.replace(f"{SCHEMA}.", "main.", 1))
            own.execute(f"PRAGMA user_version = {FORMAT}")
        finally:
            own.close()  # the last connection: its log is folded in and removed
        with contextlib.suppress(FileExistsError):
            os.link(part, path)
    except OSError as e:
        raise StoreError(f"cannot create the search index {path}: {e.strerror}") from e
    finally:
        for leftover in (part, Path(f"{part}-wal"), Path(f"{part}-shm")):
            with contextlib.suppress(OSError):
                leftover.unlink()

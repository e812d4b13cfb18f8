"""Read and open recordings databases (layer 2).

What belongs here: where the database lives, opening it safely (0600, WAL, busy timeout,
migrations from ``schema.sql``), and the read queries the commands and views use. Writing
frames is the recorder's job (``recorder.py``); this module never runs on the forwarding path.
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import orjson

from .errors import SchemaError, StoreError, UsageError
from .events import Direction, Frame, Opcode

__all__ = [
    "BUSY_TIMEOUT_MS",
    "Store",
    "StoredFrame",
    "connect",
    "default_db_path",
    "migrate",
    "read_jsonl",
    "schema_migrations",
]

BUSY_TIMEOUT_MS = int(os.environ.get("ACP_PROXY_BUSY_TIMEOUT_MS", "10000"))


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
    text = resources.files("proxy").joinpath("schema.sql").read_text(encoding="utf-8")
    parts = re.split(r"^-- migration: (\d+)\s*$", text, flags=re.MULTILINE)
    return [(int(parts[i]), parts[i + 1]) for i in range(1, len(parts), 2)]


def connect(path: Path, *, create: bool = True, readonly: bool = False) -> sqlite3.Connection:
    """Open ``path`` with the settings every connection shares.

    A new file is created with mode 0600 (recordings hold secrets; DESIGN.md principle 6)
    in a directory created 0700.
    """
    path = Path(path)
    if readonly:
        if not path.exists():
            raise StoreError(f"no recordings database at {path}")
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
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
            os.close(fd)
        except OSError as e:
            raise StoreError(f"cannot create recordings database {path}: {e.strerror}") from e
    try:
        conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        if mode != "wal":
            # a read-only file keeps its mode; writes will fail and spill
            with contextlib.suppress(sqlite3.OperationalError):
                conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    except sqlite3.Error as e:
        raise StoreError(f"cannot open recordings database {path}: {e}") from e
    return conn


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


@dataclass(frozen=True, slots=True)
class StoredFrame:
    """A frame read back, with the derived fields stored beside it."""

    capture_id: int
    frame: Frame
    size: int
    kind: str
    method: str | None
    msg_id: str | None
    session_id: str | None
    update_kind: str | None
    tool_call_id: str | None
    terminal_id: str | None
    error_code: int | None
    anomalies: tuple[str, ...]
    request_seq: int | None
    latency_ns: int | None
    rowid: int

    @property
    def seq(self) -> int:
        return self.frame.seq

    @property
    def direction(self) -> Direction:
        return self.frame.direction

    @property
    def raw(self) -> bytes:
        return self.frame.raw

    @property
    def opcode_text(self) -> str | None:
        return self.frame.opcode.value if self.frame.opcode else None


_FRAME_COLUMNS = (
    "capture_id, seq, direction, t_ns, raw, terminated, opcode, size, kind, method, msg_id, "
    "session_id, update_kind, tool_call_id, terminal_id, error_code, anomalies, request_seq, "
    "latency_ns, id"
)


def _stored(row: tuple[Any, ...]) -> StoredFrame:
    return StoredFrame(
        capture_id=row[0],
        frame=Frame(
            seq=row[1],
            direction=Direction(row[2]),
            t_ns=row[3],
            raw=bytes(row[4]),
            terminated=bool(row[5]),
            opcode=Opcode(row[6]) if row[6] else None,
        ),
        size=row[7],
        kind=row[8],
        method=row[9],
        msg_id=row[10],
        session_id=row[11],
        update_kind=row[12],
        tool_call_id=row[13],
        terminal_id=row[14],
        error_code=row[15],
        anomalies=tuple(row[16].split(",")) if row[16] else (),
        request_seq=row[17],
        latency_ns=row[18],
        rowid=row[19],
    )


class Store:
    """Read access to a recordings database. Safe while recorders write to it (WAL)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise StoreError(f"no recordings database at {self.path} (record something first)")
        self.conn = connect(self.path, create=False)
        with contextlib.suppress(sqlite3.OperationalError):  # read-only: read what is there
            migrate(self.conn)
        import sqlite_utils  # only the read side needs it

        self.db = sqlite_utils.Database(self.conn)

    def close(self) -> None:
        self.conn.close()

    def captures(self, limit: int | None = None) -> list[dict[str, Any]]:
        sql = "SELECT * FROM captures ORDER BY id DESC"
        if limit:
            sql += f" LIMIT {int(limit)}"
        rows = list(self.db.query(sql))
        rows.reverse()
        return rows

    def capture(self, ref: str | int | None) -> dict[str, Any]:
        """A capture by id, by uid prefix, or the latest when ``ref`` is None."""
        if ref is None or ref == "latest":
            rows = list(self.db.query("SELECT * FROM captures ORDER BY id DESC LIMIT 1"))
            if not rows:
                raise UsageError(f"no captures in {self.path}")
            return rows[0]
        text = str(ref)
        if text.lstrip("-").isdigit():
            n = int(text)
            if n < 0:  # -1 = latest, -2 = the one before
                rows = list(
                    self.db.query(
                        "SELECT * FROM captures ORDER BY id DESC LIMIT 1 OFFSET ?", [-n - 1]
                    )
                )
            else:
                rows = list(self.db.query("SELECT * FROM captures WHERE id = ?", [n]))
        else:
            rows = list(
                self.db.query("SELECT * FROM captures WHERE uid LIKE ? LIMIT 2", [text + "%"])
            )
            if len(rows) > 1:
                raise UsageError(f"capture {text!r} is ambiguous")
        if not rows:
            raise UsageError(f"no capture {text!r} in {self.path}")
        return rows[0]

    def frames(
        self,
        capture_id: int,
        *,
        after_seq: int = -1,
        upto_seq: int | None = None,
        limit: int | None = None,
    ) -> Iterator[StoredFrame]:
        sql = f"SELECT {_FRAME_COLUMNS} FROM messages WHERE capture_id = ? AND seq > ?"
        args: list[Any] = [capture_id, after_seq]
        if upto_seq is not None:
            sql += " AND seq <= ?"
            args.append(upto_seq)
        sql += " ORDER BY seq"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        for row in self.conn.execute(sql, args):
            yield _stored(row)

    def frames_after_rowid(self, rowid: int, capture_id: int | None = None) -> list[StoredFrame]:
        """Frames inserted after ``rowid`` (any capture unless given), for ``tail -f``."""
        sql = f"SELECT {_FRAME_COLUMNS} FROM messages WHERE id > ?"
        args: list[Any] = [rowid]
        if capture_id is not None:
            sql += " AND capture_id = ?"
            args.append(capture_id)
        sql += " ORDER BY id LIMIT 5000"
        return [_stored(r) for r in self.conn.execute(sql, args)]

    def last_frames(self, n: int, capture_id: int | None = None) -> list[StoredFrame]:
        """The ``n`` most recently inserted frames (of one capture unless None), oldest first."""
        sql = f"SELECT {_FRAME_COLUMNS} FROM messages"
        args: list[Any] = []
        if capture_id is not None:
            sql += " WHERE capture_id = ?"
            args.append(capture_id)
        sql += " ORDER BY id DESC LIMIT ?"
        args.append(n)
        return [_stored(r) for r in reversed(self.conn.execute(sql, args).fetchall())]

    def max_rowid(self) -> int:
        return int(self.conn.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0])

    def stderr(self, capture_id: int) -> list[tuple[int, bytes]]:
        return [
            (t, bytes(d))
            for t, d in self.conn.execute(
                "SELECT t_ns, data FROM stderr WHERE capture_id = ? ORDER BY id", [capture_id]
            )
        ]

    def events(self, capture_id: int) -> list[dict[str, Any]]:
        return list(
            self.db.query(
                "SELECT t_ns, kind, detail FROM events WHERE capture_id = ? ORDER BY id",
                [capture_id],
            )
        )

    def stream_bytes(self, capture_id: int, direction: Direction) -> bytes:
        """The exact bytes of one direction, frames joined with their terminators."""
        out = bytearray()
        for raw, terminated in self.conn.execute(
            "SELECT raw, terminated FROM messages WHERE capture_id = ? AND direction = ? "
            "ORDER BY seq",
            [capture_id, direction.value],
        ):
            out += raw
            if terminated:
                out += b"\n"
        return bytes(out)


def read_jsonl(lines: Iterable[bytes]) -> Iterator[Frame]:
    """Frames from a ``jsonl`` export (``acp-proxy export``), bytes exactly as recorded."""
    for line in lines:
        if not line.strip():
            continue
        obj = orjson.loads(line)
        raw = (
            obj["text"].encode("utf-8", "surrogatepass")
            if "text" in obj
            else base64.b64decode(obj["base64"])
        )
        yield Frame(
            seq=obj["seq"],
            direction=Direction(obj["direction"]),
            t_ns=obj["t_ns"],
            raw=raw,
            terminated=bool(obj.get("terminated", True)),
            opcode=Opcode(obj["opcode"]) if obj.get("opcode") else None,
        )

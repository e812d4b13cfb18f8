"""The SQLite end of recording: batches in, transactions out, spill when that fails (layer 2).

What belongs here: writing a :class:`Batch` of already derived rows in one transaction,
switching to a spill file when the database cannot be written, and bringing spill files
back in. A sink has no threads of its own: the recorder runs it in a child process (so that
SQLite's work runs on another core than the relay and its classification) or, as a
fallback, in its writer thread.

Spill files (``<db>.spill.<id>.jsonl``, mode 0600, ``flock``-ed while written) hold raw
records only; derived fields are recomputed from the bytes when they are imported.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import os
import sqlite3
import sys
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import chain
from pathlib import Path
from typing import IO, Any

import orjson

from acp_proxy import __version__
from acp_proxy.errors import StoreError
from acp_proxy.protocol.frames import Direction
from acp_proxy.protocol.jsonrpc import Info, Kind, classify
from acp_proxy.store.db import connect, migrate

__all__ = [
    "Batch",
    "SqliteSink",
    "frame_row",
    "import_spill",
    "json_text",
    "now_iso",
    "repair_pairs",
    "spill_files",
    "stderr_warn",
]

Warn = Callable[[str], None]

FRAME_COLUMNS = (
    "capture_id, seq, direction, t_ns, raw, terminated, opcode, size, kind, method, msg_id, "
    "session_id, update_kind, tool_call_id, terminal_id, error_code, anomalies, request_seq, "
    "latency_ns"
)
_ROWS_PER_STATEMENT = 50
_INSERT_OR_IGNORE_FRAME = (
    f"INSERT OR IGNORE INTO messages ({FRAME_COLUMNS}) VALUES ({', '.join('?' * 19)})"
)


def frame_row(
    seq: int,
    direction: str,
    t_ns: int,
    raw: bytes,
    terminated: bool,
    opcode: str | None,
    info: Info,
    anomalies: list[str],
    request_seq: int | None = None,
    latency_ns: int | None = None,
) -> tuple[Any, ...]:
    """A ``messages`` row without ``capture_id``, in ``FRAME_COLUMNS`` order."""
    return (
        seq,
        direction,
        t_ns,
        raw,
        1 if terminated else 0,
        opcode,
        len(raw),
        info.kind,
        info.method,
        info.id,
        info.session_id,
        info.update_kind,
        info.tool_call_id,
        info.terminal_id,
        info.error_code,
        ",".join(anomalies) if anomalies else None,
        request_seq,
        latency_ns,
    )


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def stderr_warn(message: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"acp-proxy: {message}\n")
        sys.stderr.flush()


@dataclass(slots=True)
class Batch:
    """Rows for one transaction. Captures are named by ``uid``; the sink maps them to ids.

    ``frames`` maps a uid to its rows, each following ``FRAME_COLUMNS`` without
    ``capture_id`` (so rows need no rebuilding to carry the id the sink assigns);
    ``updates`` maps a uid to the capture columns to set.
    """

    opens: list[dict[str, Any]] = field(default_factory=list)
    frames: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    items: list[tuple[Any, ...]] = field(default_factory=list)
    stderr: list[tuple[Any, ...]] = field(default_factory=list)
    events: list[tuple[Any, ...]] = field(default_factory=list)
    updates: dict[str, dict[str, Any]] = field(default_factory=dict)
    # uid -> frames numbered before this batch; the sink records any it does not hold as a
    # gap (sent after the recorder process died with batches in flight)
    expect: dict[str, int] = field(default_factory=dict)

    @property
    def frame_count(self) -> int:
        return sum(len(rows) for rows in self.frames.values())

    def frame_rows(self) -> list[tuple[Any, ...]]:
        """Frame rows with the uid first."""
        return [(uid, *r) for uid, rows in self.frames.items() for r in rows]

    def empty(self) -> bool:
        return not (self.opens or self.frames or self.stderr or self.events or self.updates)


class SqliteSink:
    """Writes batches into ``db_path``; never raises for database trouble, spills instead."""

    def __init__(
        self, db_path: Path, *, warn: Warn = stderr_warn, import_spills: bool = True
    ) -> None:
        self.db_path = Path(db_path)
        self._warn = warn
        self._conn: sqlite3.Connection | None = None
        self._ids: dict[str, int] = {}
        self._statements: dict[tuple[int, int], str] = {}
        self._spill: IO[bytes] | None = None
        self._spill_path: Path | None = None
        self.lost = 0
        self._lost_by_uid: dict[str, list[int]] = {}  # uid -> [frames, first seq, last seq]
        self._metas: dict[str, dict[str, Any]] = {}
        self.frames_written = 0
        try:
            self._conn = connect(self.db_path)
            migrate(self._conn)
        except (StoreError, sqlite3.Error) as e:
            self._conn = None
            self._fail(str(e))
        if self._conn is not None and import_spills:
            for path in spill_files(self.db_path):
                with contextlib.suppress(sqlite3.Error, OSError, ValueError):
                    n = import_spill(self._conn, path)
                    if n is not None:
                        self._warn(f"imported {n} spilled frames from {path}")

    def write(self, b: Batch) -> None:
        if b.empty():
            return
        if self._conn is not None and self._spill is None:
            try:
                self._write(self._conn, b)
                self.frames_written += b.frame_count
                return
            except sqlite3.Error as e:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.execute("ROLLBACK")
                for meta in b.opens:
                    self._ids.pop(meta["uid"], None)
                self._fail(str(e))
        self._spill_batch(b)

    def close(self) -> None:
        if self._spill is not None:
            self._spill.close()
            self._spill = None
            self._reimport_own_spill()
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("PRAGMA optimize")
            self._conn.close()
            self._conn = None
        if self.lost:
            self._record_gaps()
            if self._spill_path is not None:  # else the first warning said so already
                self._warn(f"warning: {self.lost} frames could not be recorded anywhere")

    def _record_gaps(self) -> None:
        """Loss that happened anyway is written down as ``gap`` events once the database
        can be written again (DESIGN.md principle 3)."""
        try:
            conn = connect(self.db_path)
            migrate(conn)
        except (StoreError, sqlite3.Error):
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
            for uid, (count, first, last) in self._lost_by_uid.items():
                row = conn.execute("SELECT id FROM captures WHERE uid = ?", [uid]).fetchone()
                if row is None:
                    m = self._metas.get(uid, {})
                    row = conn.execute(
                        "INSERT INTO captures (uid, transport, started_at, started_ns, "
                        "proxy_version, label) VALUES (?,?,?,?,?,?) RETURNING id",
                        [
                            uid,
                            m.get("transport", "unknown"),
                            m.get("started_at", now_iso()),
                            m.get("started_ns", 0),
                            __version__,
                            m.get("label"),
                        ],
                    ).fetchone()
                conn.execute(
                    "INSERT INTO events (capture_id, t_ns, kind, detail) VALUES (?, 0, 'gap', ?)",
                    [row[0], _json({"frames": count, "first_seq": first, "last_seq": last})],
                )
                conn.execute(
                    "UPDATE captures SET lost_count = lost_count + ? WHERE id = ?", [count, row[0]]
                )
            conn.execute("COMMIT")
        except sqlite3.Error:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        finally:
            conn.close()

    # -- database -----------------------------------------------------------------------

    def _write(self, conn: sqlite3.Connection, b: Batch) -> None:
        ids = self._ids
        conn.execute("BEGIN IMMEDIATE")
        for m in b.opens:
            # ON CONFLICT: a recorder that took over from a dead recorder process re-sends
            # the captures still open, some of which are in the database already.
            row = conn.execute(
                "INSERT INTO captures (uid, transport, agent_command, cwd, upstream_url, "
                "listen_url, pid, proxy_pid, started_at, started_ns, proxy_version, label) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT (uid) DO NOTHING RETURNING id",
                (
                    m["uid"],
                    m["transport"],
                    _json(m["agent_command"]) if m["agent_command"] else None,
                    m["cwd"],
                    m["upstream_url"],
                    m["listen_url"],
                    m["pid"],
                    m["proxy_pid"],
                    m["started_at"],
                    m["started_ns"],
                    __version__,
                    m["label"],
                ),
            ).fetchone()
            if row is None:
                row = conn.execute("SELECT id FROM captures WHERE uid = ?", [m["uid"]]).fetchone()
            ids[m["uid"]] = int(row[0])
        for uid, before in b.expect.items():
            self._record_missing(conn, self._capture_id(conn, uid), before)
        for uid, rows in b.frames.items():
            self._insert_frames(conn, self._capture_id(conn, uid), rows)
        if b.items:
            conn.executemany(
                "INSERT INTO batch_items VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [(self._capture_id(conn, r[0]), *r[1:]) for r in b.items],
            )
        if b.stderr:
            conn.executemany(
                "INSERT INTO stderr (capture_id, t_ns, data) VALUES (?,?,?)",
                [(self._capture_id(conn, r[0]), r[1], r[2]) for r in b.stderr],
            )
        if b.events:
            conn.executemany(
                "INSERT INTO events (capture_id, t_ns, kind, detail) VALUES (?,?,?,?)",
                [
                    (self._capture_id(conn, r[0]), r[1], r[2], _json(r[3]) if r[3] else None)
                    for r in b.events
                ],
            )
        for uid, fields in b.updates.items():
            if fields:
                cols = ", ".join(f"{k} = ?" for k in fields)
                conn.execute(
                    f"UPDATE captures SET {cols} WHERE id = ?",
                    [*fields.values(), self._capture_id(conn, uid)],
                )
        conn.execute("COMMIT")

    def _record_missing(self, conn: sqlite3.Connection, capture_id: int, before: int) -> None:
        """A gap event for frames ``held..before-1`` that never reached the database."""
        (top,) = conn.execute(
            "SELECT MAX(seq) FROM messages WHERE capture_id = ?", [capture_id]
        ).fetchone()
        held = 0 if top is None else top + 1
        if held < before:
            detail = {
                "frames": before - held,
                "first_seq": held,
                "last_seq": before - 1,
                "reason": "recorder process died",
            }
            conn.execute(
                "INSERT INTO events (capture_id, t_ns, kind, detail) VALUES (?, 0, 'gap', ?)",
                [capture_id, _json(detail)],
            )
            conn.execute(
                "UPDATE captures SET lost_count = lost_count + ? WHERE id = ?",
                [before - held, capture_id],
            )
            self._warn(
                f"warning: {before - held} frames were lost with the recorder process "
                f"(seq {held} to {before - 1}); recorded as a gap"
            )

    def _capture_id(self, conn: sqlite3.Connection, uid: str) -> int:
        """The id of a capture this sink has opened, or found in the database by uid."""
        cid = self._ids.get(uid)
        if cid is None:
            row = conn.execute("SELECT id FROM captures WHERE uid = ?", [uid]).fetchone()
            if row is None:
                raise sqlite3.IntegrityError(f"capture {uid} was never opened")
            cid = self._ids[uid] = int(row[0])
        return cid

    def _insert_frames(
        self, conn: sqlite3.Connection, capture_id: int, rows: list[tuple[Any, ...]]
    ) -> None:
        """Insert ``_ROWS_PER_STATEMENT`` rows per statement: SQLite's per-statement work
        and the module's per-row call overhead are paid once for many rows."""
        k = _ROWS_PER_STATEMENT
        full = len(rows) - len(rows) % k
        if full:
            conn.executemany(
                self._statement(capture_id, k),
                (list(chain.from_iterable(rows[i : i + k])) for i in range(0, full, k)),
            )
        if full < len(rows):
            conn.executemany(self._statement(capture_id, 1), rows[full:])

    def _statement(self, capture_id: int, n: int) -> str:
        key = (capture_id, n)
        sql = self._statements.get(key)
        if sql is None:  # the id is ours (an integer from the database), safe as a literal
            one = f"({int(capture_id)}, {', '.join('?' * 18)})"
            sql = f"INSERT INTO messages ({FRAME_COLUMNS}) VALUES {', '.join([one] * n)}"
            self._statements[key] = sql
        return sql

    # -- spill --------------------------------------------------------------------------

    def _fail(self, reason: str) -> None:
        if self._spill is not None:
            return
        path = Path(f"{self.db_path}.spill.{uuid.uuid4().hex[:12]}.jsonl")
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_APPEND, 0o600)
            self._spill = os.fdopen(fd, "ab")
            fcntl.flock(self._spill.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            self._spill_path = path
            self._warn(
                f"warning: cannot write recordings database {self.db_path} ({reason}); "
                f"traffic is still forwarded; recording to {path} "
                f"(bring it in with: acp-proxy import-spill --db {self.db_path})"
            )
        except OSError as e:
            self._spill = None
            self._warn(
                f"warning: cannot write recordings database {self.db_path} ({reason}) nor a "
                f"spill file ({e.strerror}); traffic is still forwarded but NOT recorded"
            )

    def _count_lost(self, b: Batch) -> None:
        for m in b.opens:
            self._metas[m["uid"]] = m
        self.lost += b.frame_count
        for r in b.frame_rows():
            entry = self._lost_by_uid.setdefault(r[0], [0, r[1], r[1]])
            entry[0] += 1
            entry[2] = r[1]

    def _spill_batch(self, b: Batch) -> None:
        if self._spill is None:
            self._count_lost(b)
            return
        lines = [_json_line({"t": "capture", **m}) for m in b.opens]
        lines += [
            _json_line(
                {
                    "t": "frame",
                    "uid": r[0],
                    "seq": r[1],
                    "dir": r[2],
                    "t_ns": r[3],
                    "raw": base64.b64encode(r[4]).decode(),
                    "terminated": r[5],
                    "opcode": r[6],
                }
            )
            for r in b.frame_rows()
        ]
        lines += [
            _json_line(
                {"t": "stderr", "uid": r[0], "t_ns": r[1], "data": base64.b64encode(r[2]).decode()}
            )
            for r in b.stderr
        ]
        lines += [
            _json_line({"t": "event", "uid": r[0], "t_ns": r[1], "kind": r[2], "detail": r[3]})
            for r in b.events
        ]
        lines += [
            _json_line({"t": "update", "uid": uid, "fields": f}) for uid, f in b.updates.items()
        ]
        try:
            self._spill.write(b"".join(lines))
            self._spill.flush()
        except OSError as e:
            self._count_lost(b)
            self._warn(
                f"warning: spill file {self._spill_path} failed ({e.strerror}); "
                f"{b.frame_count} frames lost"
            )

    def _reimport_own_spill(self) -> None:
        if self._spill_path is None:
            return
        try:
            conn = connect(self.db_path)
            migrate(conn)
        except (StoreError, sqlite3.Error):
            return
        try:
            import_spill(conn, self._spill_path)
        except sqlite3.Error:
            return
        finally:
            conn.close()
        self._warn(f"recordings from {self._spill_path} are now in {self.db_path}")


def json_text(v: Any) -> str:
    """Compact JSON text for a TEXT column."""
    return _json(v)


def _json(v: Any) -> str:
    return orjson.dumps(v, option=orjson.OPT_NON_STR_KEYS, default=str).decode()


def _json_line(v: Any) -> bytes:
    return orjson.dumps(v, option=orjson.OPT_NON_STR_KEYS, default=str) + b"\n"


def spill_files(db_path: Path) -> list[Path]:
    """Spill files that belong to ``db_path``."""
    p = Path(db_path)
    return sorted(p.parent.glob(p.name + ".spill.*.jsonl"))


def import_spill(conn: sqlite3.Connection, path: Path) -> int | None:
    """Bring a spill file's records into the database; returns frames imported.

    Returns ``None`` (and leaves the file) when another process still writes it. Derived
    fields are recomputed from the raw bytes; pairing is redone for the affected captures.
    The file is removed once its records are committed.
    """
    try:
        f = open(path, "rb")  # noqa: SIM115 - held for the lock
    except FileNotFoundError:
        return 0
    with f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return None
        records = [orjson.loads(line) for line in f if line.strip()]
        n = _import_records(conn, records)
        path.unlink()
    return n


def _import_records(conn: sqlite3.Connection, records: Iterable[dict[str, Any]]) -> int:
    ids: dict[str, int] = {}

    def capture_id(uid: str) -> int:
        if uid not in ids:
            row = conn.execute("SELECT id FROM captures WHERE uid = ?", [uid]).fetchone()
            if row is None:
                cur = conn.execute(
                    "INSERT INTO captures (uid, transport, started_at, started_ns, "
                    "proxy_version) VALUES (?, 'unknown', ?, 0, ?)",
                    [uid, now_iso(), __version__],
                )
                ids[uid] = int(cur.lastrowid or 0)
            else:
                ids[uid] = int(row[0])
        return ids[uid]

    frames = 0
    conn.execute("BEGIN IMMEDIATE")
    try:
        for r in records:
            t = r["t"]
            if t == "capture":
                cid = capture_id(r["uid"])
                conn.execute(
                    "UPDATE captures SET transport=?, agent_command=?, cwd=?, upstream_url=?, "
                    "listen_url=?, pid=?, proxy_pid=?, started_at=?, started_ns=?, label=? "
                    "WHERE id=?",
                    [
                        r["transport"],
                        _json(r["agent_command"]) if r["agent_command"] else None,
                        r["cwd"],
                        r["upstream_url"],
                        r["listen_url"],
                        r["pid"],
                        r["proxy_pid"],
                        r["started_at"],
                        r["started_ns"],
                        r["label"],
                        cid,
                    ],
                )
            elif t == "frame":
                cid = capture_id(r["uid"])
                raw = base64.b64decode(r["raw"])
                opcode = r.get("opcode")
                info = (
                    Info(Kind.INVALID, anomalies=["binary"])
                    if opcode == "binary"
                    else classify(raw)
                )
                row = frame_row(
                    r["seq"],
                    r["dir"],
                    r["t_ns"],
                    raw,
                    bool(r["terminated"]),
                    opcode,
                    info,
                    [*info.anomalies, "spilled"],
                )
                conn.execute(_INSERT_OR_IGNORE_FRAME, (cid, *row))
                frames += 1
            elif t == "stderr":
                conn.execute(
                    "INSERT INTO stderr (capture_id, t_ns, data) VALUES (?,?,?)",
                    [capture_id(r["uid"]), r["t_ns"], base64.b64decode(r["data"])],
                )
            elif t == "event":
                conn.execute(
                    "INSERT INTO events (capture_id, t_ns, kind, detail) VALUES (?,?,?,?)",
                    [
                        capture_id(r["uid"]),
                        r["t_ns"],
                        r["kind"],
                        _json(r["detail"]) if r["detail"] else None,
                    ],
                )
            elif t == "update":
                fields = {k: v for k, v in r["fields"].items() if k.isidentifier()}
                if fields:
                    cols = ", ".join(f"{k} = ?" for k in fields)
                    conn.execute(
                        f"UPDATE captures SET {cols} WHERE id = ?",
                        [*fields.values(), capture_id(r["uid"])],
                    )
        for cid in ids.values():
            repair_pairs(conn, cid)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return frames


def repair_pairs(conn: sqlite3.Connection, capture_id: int) -> None:
    """Recompute request/response pairing and the message count of one capture."""
    pending: dict[tuple[str, str], tuple[int, int, str | None]] = {}
    updates: list[tuple[Any, ...]] = []
    rows = conn.execute(
        "SELECT seq, direction, t_ns, kind, msg_id, method FROM messages "
        "WHERE capture_id = ? AND msg_id IS NOT NULL ORDER BY seq",
        [capture_id],
    ).fetchall()
    for seq, direction, t, kind, msg_id, method in rows:
        if kind == Kind.REQUEST:
            pending[(direction, msg_id)] = (seq, t, method)
        elif kind in (Kind.RESPONSE, Kind.ERROR):
            other = Direction(direction).opposite.value
            found = pending.pop((other, msg_id), None)
            if found is not None:
                updates.append((found[0], t - found[1], found[2], capture_id, seq))
    conn.executemany(
        "UPDATE messages SET request_seq = ?, latency_ns = ?, method = COALESCE(method, ?) "
        "WHERE capture_id = ? AND seq = ?",
        updates,
    )
    conn.execute(
        "UPDATE captures SET message_count = "
        "(SELECT COUNT(*) FROM messages WHERE capture_id = ?) WHERE id = ?",
        [capture_id, capture_id],
    )

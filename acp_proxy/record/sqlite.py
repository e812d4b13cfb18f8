"""The recorder's database side: rows in, one transaction per batch.

What belongs here: every statement the recorder writes with — opening captures, inserting
frames (many rows per statement, long frames piece by piece), stderr, events, gaps and
capture progress — and reading back where a capture stands (:meth:`Database.resume`) so a
recorder can carry on after another one stopped. Errors are not handled here: a failed
batch raises, and :mod:`acp_proxy.record.recorder` decides what to do.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from acp_proxy import __version__, events
from acp_proxy.events import UNSET
from acp_proxy.record.core.rows import (
    CaptureFields,
    EventRow,
    FrameRow,
    GapRow,
    ItemRow,
    MarkRow,
    OpenRow,
    Row,
    StderrRow,
)
from acp_proxy.record.core.state import RELAY_COLUMNS, Pending, Resume, json_text
from acp_proxy.record.core.wire import Stream
from acp_proxy.record.inserts import FrameInserter, info_values
from acp_proxy.store.db import connect, migrate, now_iso

__all__ = ["Database"]

_OPEN_COLUMNS = (
    "uid",
    "transport",
    "agent_command",
    "cwd",
    "upstream_url",
    "listen_url",
    "pid",
    "proxy_pid",
    "proxy_start",
    "started_at",
    "started_ns",
    "label",
    "journal",
    "journal_number",
)
_SETTABLE = RELAY_COLUMNS | {
    "protocol_version",
    "client_info",
    "agent_info",
    "client_capabilities",
    "agent_capabilities",
    "message_count",
    "rseq",
    "c2a_position",
    "a2c_position",
    "stderr_position",
    "finished_at",
}


class Database:
    """The recordings database as the recorder writes it."""

    def __init__(
        self,
        path: Path,
        *,
        recorder_pid: int | None = None,
        recorder_start: str | None = None,
        busy_timeout_ms: int = 250,
    ) -> None:
        self.path = Path(path)
        self.conn: sqlite3.Connection = connect(self.path)
        self.conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        migrate(self.conn)
        self._ids: dict[str, int] = {}
        self._inserter = FrameInserter(self.conn)
        self._journal: str | None = None  # the journal of the batch being written
        self._recorder = (recorder_pid, recorder_start)

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.conn.execute("PRAGMA optimize")
        self.conn.close()

    # -- where a capture stands ----------------------------------------------------------

    def capture_id(self, uid: str) -> int | None:
        cid = self._ids.get(uid)
        if cid is None:
            row = self.conn.execute("SELECT id FROM captures WHERE uid = ?", [uid]).fetchone()
            if row is None:
                return None
            cid = self._ids[uid] = int(row[0])
        return cid

    def journal_position(self, journal: str) -> int | None:
        """How far ``journal`` has been read into the database (None: not at all)."""
        row = self.conn.execute(
            "SELECT position FROM journals WHERE name = ?", [journal]
        ).fetchone()
        return None if row is None else int(row[0])

    def forget_journal(self, journal: str) -> None:
        self.conn.execute("DELETE FROM journals WHERE name = ?", [journal])

    def lookup(self, journal: str, number: int) -> tuple[str, Resume] | None:
        """Capture ``number`` of ``journal``: its uid and where it stands."""
        row = self.conn.execute(
            "SELECT uid FROM captures WHERE journal = ? AND journal_number = ?",
            [journal, number],
        ).fetchone()
        if row is None:
            return None
        state = self.resume(row[0])
        return None if state is None else (row[0], state)

    def resume(self, uid: str) -> Resume | None:
        """Where capture ``uid`` stands, or None when the database does not have it."""
        row = self.conn.execute(
            "SELECT id, started_ns, message_count, rseq, c2a_position, a2c_position, "
            "stderr_position, ended_at FROM captures WHERE uid = ?",
            [uid],
        ).fetchone()
        if row is None:
            return None
        cid, started, count, rseq, c2a, a2c, err, ended = row
        self._ids[uid] = cid
        (top,) = self.conn.execute(
            "SELECT MAX(seq) FROM messages WHERE capture_id = ?", [cid]
        ).fetchone()
        pending = [
            Pending(d, token, seq, t, method)
            for seq, d, token, t, method in self.conn.execute(
                "SELECT q.seq, q.direction, q.msg_id, q.t_ns, q.method FROM messages q "
                "WHERE q.capture_id = ? AND q.kind = 'request' AND q.msg_id IS NOT NULL "
                "AND NOT EXISTS (SELECT 1 FROM messages r WHERE r.capture_id = q.capture_id "
                "AND r.request_seq = q.seq) ORDER BY q.seq",
                [cid],
            )
        ]
        self.conn.execute(
            "UPDATE captures SET recorder_pid = ?, recorder_start = ? WHERE id = ?",
            [*self._recorder, cid],
        )
        return Resume(
            started_ns=started,
            next_seq=0 if top is None else top + 1,
            message_count=count,
            rseq=rseq,
            positions={Stream.C2A: c2a, Stream.A2C: a2c, Stream.STDERR: err},
            pending=pending,
            ended=ended is not None,
        )

    # -- writing -------------------------------------------------------------------------

    def write(
        self, rows: Sequence[Row], journal: str | None = None, position: int | None = None
    ) -> None:
        """Write ``rows`` in one transaction, with how far ``journal`` has been read
        (``position``: rows and position land together or not at all); raises
        ``sqlite3.Error`` (rolled back)."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            self._journal = journal  # captures opened now came in this journal
            self._write(rows)
            if journal is not None and position is not None:
                conn.execute(
                    "INSERT INTO journals (name, position, updated_at) VALUES (?, ?, ?) "
                    "ON CONFLICT (name) DO UPDATE SET position = excluded.position, "
                    "updated_at = excluded.updated_at",
                    [journal, position, now_iso()],
                )
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            for r in rows:
                if isinstance(r, OpenRow):
                    self._ids.pop(r.uid, None)
            raise

    def _frames(self, by_uid: dict[str, list[FrameRow]]) -> None:
        for uid, rows in by_uid.items():
            self._inserter.insert(self._id(uid), rows)

    def _write(self, rows: Sequence[Row]) -> None:
        frames: dict[str, list[FrameRow]] = {}
        uid, run = None, None  # the capture of the last frame and its list (most run on)
        for r in rows:
            if r.__class__ is FrameRow:
                assert isinstance(r, FrameRow)
                if r.uid != uid or run is None:
                    uid = r.uid
                    run = frames.setdefault(uid, [])
                run.append(r)
                continue
            uid, run = None, None
            if frames:  # keep order: frames before what follows them (marks, fields)
                self._frames(frames)
                frames = {}
            if isinstance(r, OpenRow):
                self._open(r)
            elif isinstance(r, ItemRow):
                self._item(r)
            elif isinstance(r, StderrRow):
                self.conn.execute(
                    "INSERT INTO stderr (capture_id, t_ns, data) VALUES (?,?,?)",
                    [self._id(r.uid), r.t_ns, r.data],
                )
            elif isinstance(r, EventRow):
                self._event(self._id(r.uid), r.t_ns, r.kind, r.detail)
            elif isinstance(r, CaptureFields):
                self._fields(r)
            elif isinstance(r, GapRow):
                self._gap(r)
            elif isinstance(r, MarkRow):
                self._mark(r)
        if frames:
            self._frames(frames)

    def _id(self, uid: str) -> int:
        cid = self.capture_id(uid)
        if cid is None:
            raise sqlite3.IntegrityError(f"capture {uid} was never opened")
        return cid

    def _open(self, r: OpenRow) -> None:
        m = r.meta
        if m.get("journal") is None and self._journal is not None:
            m = {**m, "journal": self._journal}
        values = [m.get(k) for k in _OPEN_COLUMNS]
        command = m.get("agent_command")
        values[2] = json_text(command) if command else None
        if not isinstance(values[10], int):
            values[10] = 0
        if not isinstance(values[9], str):
            values[9] = now_iso()
        if not isinstance(values[1], str):
            values[1] = "unknown"
        columns = [*_OPEN_COLUMNS, "proxy_version", "recorder_pid", "recorder_start"]
        row = self.conn.execute(
            f"INSERT INTO captures ({', '.join(columns)}) "
            f"VALUES ({', '.join('?' * len(columns))}) "
            "ON CONFLICT (uid) DO NOTHING RETURNING id",
            [*_texts(values), __version__, *self._recorder],
        ).fetchone()
        if row is None:
            row = self.conn.execute("SELECT id FROM captures WHERE uid = ?", [r.uid]).fetchone()
        self._ids[r.uid] = int(row[0])

    def _item(self, r: ItemRow) -> None:
        i = r.info
        self.conn.execute(
            "INSERT OR IGNORE INTO batch_items VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [
                self._id(r.uid),
                r.seq,
                r.idx,
                *info_values(i),
                r.request_seq,
                r.latency_ns,
            ],
        )

    def _event(self, cid: int, t_ns: int, kind: str, detail: dict[str, Any] | None) -> None:
        self.conn.execute(
            "INSERT INTO events (capture_id, t_ns, kind, detail) VALUES (?,?,?,?)",
            [cid, t_ns, kind, json_text(detail) if detail else None],
        )

    def _fields(self, r: CaptureFields) -> None:
        fields = {k: v for k, v in r.fields.items() if k in _SETTABLE}
        if "end_reason" in fields:
            fields.setdefault("finished_at", now_iso())  # an import carries its own
        if not fields:
            return
        cols = ", ".join(f"{k} = ?" for k in fields)
        self.conn.execute(
            f"UPDATE captures SET {cols} WHERE id = ?",
            [*_texts(list(fields.values())), self._id(r.uid)],
        )

    def _gap(self, r: GapRow) -> None:
        cid = self._id(r.uid)
        unit = "messages" if r.stream in ("c2a", "a2c") and self._is_messages(cid) else "bytes"
        size = r.end - r.start
        gap = events.Gap(
            stream=r.stream,
            start=r.start,
            end=r.end,
            bytes_=size if unit == "bytes" else UNSET,
            messages=size if unit == "messages" else UNSET,
            frames=r.frames,
            reason=r.reason,
            after_seq=r.after_seq,
        )
        self._event(cid, r.t_ns, gap.kind, gap.detail())
        frames = r.frames
        if frames is None:
            frames = r.end - r.start if unit == "messages" else 0
        self.conn.execute(
            "UPDATE captures SET lost_count = lost_count + ?, lost_bytes = lost_bytes + ? "
            "WHERE id = ?",
            [frames, r.end - r.start if unit == "bytes" else 0, cid],
        )

    def _is_messages(self, cid: int) -> bool:
        row = self.conn.execute("SELECT transport FROM captures WHERE id = ?", [cid]).fetchone()
        return row is not None and row[0] != "stdio"

    def _mark(self, r: MarkRow) -> None:
        self.conn.execute(
            "UPDATE messages SET anomalies = CASE WHEN anomalies IS NULL THEN ? "
            "ELSE anomalies || ',' || ? END "
            "WHERE capture_id = ? AND seq BETWEEN ? AND ? "
            "AND (anomalies IS NULL OR ',' || anomalies || ',' NOT LIKE '%,' || ? || ',%')",
            [r.anomaly, r.anomaly, self._id(r.uid), r.first_seq, r.last_seq, r.anomaly],
        )


def _texts(values: list[Any]) -> list[Any]:
    """Values as SQLite can bind them: text that is not UTF-8 escaped, ints in 64 bits."""
    out = []
    for v in values:
        if isinstance(v, str) and not v.isascii():
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                v = v.encode("utf-8", "backslashreplace").decode("utf-8")
        elif isinstance(v, int) and not -(2**63) <= v < 2**63:
            v = str(v)
        elif v is not None and not isinstance(v, str | int | float | bytes):
            v = json_text(v)
        out.append(v)
    return out

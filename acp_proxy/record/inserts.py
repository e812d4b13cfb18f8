"""Frames into the ``messages`` table, as fast as SQLite takes them.

What belongs here: the statements that insert frames — many rows per statement, a lean
statement for frames with only the common fields, and a frame held in pieces written into
its blob piece by piece. The rest of the recorder's writing is :mod:`acp_proxy.record.sqlite`.
"""

from __future__ import annotations

import sqlite3
from itertools import chain
from typing import Any

from acp_proxy.protocol.jsonrpc import Info, Kind
from acp_proxy.record.core.rows import FrameRow

__all__ = ["FRAME_COLUMNS", "FrameInserter", "info_values"]

FRAME_COLUMNS = (
    "capture_id, seq, direction, t_ns, raw, terminated, opcode, size, kind, method, msg_id, "
    "session_id, update_kind, tool_call_id, terminal_id, error_code, anomalies, request_seq, "
    "latency_ns"
)
_ROWS_PER_STATEMENT = 50
_FULL_COLUMNS = FRAME_COLUMNS.removeprefix("capture_id, ")
_LEAN_COLUMNS = "seq, direction, t_ns, raw, terminated, size, kind, method, session_id, update_kind"
# A statement's shape: the columns it binds, how many, and the columns it holds as
# constants (SQL literals of ours, never a peer's text).
_Shape = tuple[str, int, tuple[tuple[str, str], ...]]
_FULL: _Shape = (_FULL_COLUMNS, 18, ())
_LEAN: _Shape = (_LEAN_COLUMNS, 10, ())
_LEAN_TEXT: _Shape = (_LEAN_COLUMNS, 10, (("opcode", "'text'"),))
_UPDATE_COLUMNS = "seq, t_ns, raw, size, session_id, update_kind"


def _update_shape(direction: str, opcode: str | None) -> _Shape:
    constants = [
        ("direction", f"'{direction}'"),
        ("kind", "'notification'"),
        ("method", "'session/update'"),
        ("terminated", "1"),
    ]
    if opcode is not None:
        constants.append(("opcode", f"'{opcode}'"))
    return (_UPDATE_COLUMNS, 6, tuple(constants))


_UPDATES: dict[tuple[str, str | None], _Shape] = {
    (d, o): _update_shape(d, o) for d in ("c2a", "a2c") for o in (None, "text")
}
"""The shapes of a terminated ``session/update`` notification with only the common fields
(most of a long capture), by direction and opcode: all but six columns are constants of
the statement (ours, never a peer's text)."""


def info_values(i: Info) -> tuple[Any, ...]:
    """The derived fields of a frame or a batch entry, in the order their tables have them."""
    return (
        i.kind,
        i.method,
        i.id,
        i.session_id,
        i.update_kind,
        i.tool_call_id,
        i.terminal_id,
        i.error_code,
    )


def _frame_values(r: FrameRow) -> tuple[Any, ...]:
    return (
        r.seq,
        r.direction,
        r.t_ns,
        r.raw,
        1 if r.terminated else 0,
        r.opcode,
        len(r.raw),
        *info_values(r.info),
        ",".join(r.anomalies) if r.anomalies else None,
        r.request_seq,
        r.latency_ns,
    )


class FrameInserter:
    """Inserts the frames of a batch; keeps the statements it has built."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._statements: dict[tuple[int, _Shape, int], str] = {}

    def insert(self, cid: int, rows: list[FrameRow]) -> None:
        """Insert many rows per statement (SQLite's per-statement work and the module's
        per-row overhead are paid once for many rows). Frames with nothing but the common
        fields — most notifications — go through a statement that binds only those:
        binding a parameter, even a NULL, is most of an insert's cost; a WebSocket text
        message's opcode is a constant of that statement, not a parameter, and so is all
        of a plain ``session/update`` but its seq, time, bytes, size, session and kind
        (:data:`_UPDATES`). Rows go in
        ``seq`` order, a run of one shape at a time, so rowid order stays the capture's."""
        shape: _Shape = _FULL
        run: list[tuple[Any, ...]] = []
        append = run.append
        for r in rows:
            if r.parts is not None:
                self._insert(cid, shape, run)
                run = []
                append = run.append
                self._long_frame(cid, r)
                continue
            i = r.info
            opcode = r.opcode
            values: tuple[Any, ...]
            if (
                r.request_seq is not None
                or r.anomalies
                or i.id is not None
                or i.tool_call_id is not None
                or i.terminal_id is not None
                or i.error_code is not None
                or not (opcode is None or opcode == "text")
            ):
                now, values = _FULL, _frame_values(r)
            elif i.method == "session/update" and r.terminated and i.kind == Kind.NOTIFICATION:
                now = _UPDATES[r.direction, opcode]
                values = (r.seq, r.t_ns, r.raw, len(r.raw), i.session_id, i.update_kind)
            else:
                now = _LEAN if opcode is None else _LEAN_TEXT
                raw = r.raw
                values = (
                    r.seq,
                    r.direction,
                    r.t_ns,
                    raw,
                    1 if r.terminated else 0,
                    len(raw),
                    i.kind,
                    i.method,
                    i.session_id,
                    i.update_kind,
                )
            if now is not shape:
                self._insert(cid, shape, run)
                shape, run = now, []
                append = run.append
            append(values)
        self._insert(cid, shape, run)

    def _insert(self, cid: int, shape: _Shape, rows: list[tuple[Any, ...]]) -> None:
        if not rows:
            return
        k = _ROWS_PER_STATEMENT
        whole = len(rows) - len(rows) % k
        if whole:
            self.conn.executemany(
                self._statement(cid, shape, k),
                (list(chain.from_iterable(rows[i : i + k])) for i in range(0, whole, k)),
            )
        if whole < len(rows):
            self.conn.executemany(self._statement(cid, shape, 1), rows[whole:])

    def _long_frame(self, cid: int, r: FrameRow) -> None:
        """A frame too long to bind at once: a zeroblob filled piece by piece."""
        values = list(_frame_values(r))
        size = r.size
        values[3] = None
        values[6] = size
        (rowid,) = self.conn.execute(
            f"INSERT INTO messages ({FRAME_COLUMNS}) VALUES ({int(cid)}, "
            f"{', '.join('zeroblob(?)' if i == 3 else '?' for i in range(18))}) RETURNING id",
            [size if i == 3 else v for i, v in enumerate(values)],
        ).fetchone()
        with self.conn.blobopen("messages", "raw", rowid) as blob:
            for part in r.parts or ():
                blob.write(part)

    def _statement(self, capture_id: int, shape: _Shape, n: int) -> str:
        key = (capture_id, shape, n)
        sql = self._statements.get(key)
        if sql is None:  # the id is ours (an integer from the database), safe as a literal
            bound, width, constants = shape
            values = ["?"] * width + [literal for _, literal in constants]
            one = f"({int(capture_id)}, {', '.join(values)})"
            columns = ", ".join([bound, *(name for name, _ in constants)])
            sql = (
                f"INSERT OR IGNORE INTO messages (capture_id, {columns}) VALUES "
                f"{', '.join([one] * n)}"
            )
            self._statements[key] = sql
        return sql

"""Read recordings: captures, frames, stderr and events.

What belongs here: the read queries the commands and views use, and :class:`StoredFrame`
(a frame with the fields derived from it). Safe while recorders write (WAL); never on the
forwarding path.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp_proxy.errors import StoreError, UsageError
from acp_proxy.protocol.frames import Direction, Frame, Opcode
from acp_proxy.store.db import connect, default_db_path, migrate
from acp_proxy.store.numbers import INT64_MAX, fits
from acp_proxy.store.scan import frame_window

__all__ = ["Store", "StoredFrame", "default_db_path"]


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


_MIN_NUMERIC_PREFIX = 4  # an all-digit reference this long may be a uid prefix
_NUMBER = re.compile(r"(-?)([0-9]+)")  # an id, or -N: the Nth capture back from the latest
_FRAME_COLUMNS = (
    "capture_id, seq, direction, t_ns, raw, terminated, opcode, size, kind, method, msg_id, "
    "session_id, update_kind, tool_call_id, terminal_id, error_code, anomalies, request_seq, "
    "latency_ns, id"
)


# A request no response answered (the pairing the recorder stored: a response's
# request_seq, or a batch entry's), asked of a capture that has ended.
_UNANSWERED = (
    "(kind = 'request' AND NOT EXISTS (SELECT 1 FROM messages r WHERE r.capture_id = "
    "messages.capture_id AND r.request_seq = messages.seq) AND NOT EXISTS (SELECT 1 FROM "
    "batch_items b WHERE b.capture_id = messages.capture_id AND b.request_seq = messages.seq))"
)
UNANSWERED = "unanswered"
# A batch, or a frame whose derived fields did not come from parsing its stored bytes whole.
_ODD = "(kind = 'batch' OR anomalies IS NOT NULL AND ({}))".format(
    " OR ".join(f"instr(anomalies, '{a}') > 0" for a in ("skimmed", "underivable", "binary"))
)


def _marks(values: Collection[object]) -> str:
    return ",".join("?" * len(values))


def _stored(row: tuple[Any, ...]) -> StoredFrame:
    anomalies = tuple(row[16].split(",")) if row[16] else ()
    if len(row) > 20 and row[20]:
        anomalies = (*anomalies, UNANSWERED)
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
        anomalies=anomalies,
        request_seq=row[17],
        latency_ns=row[18],
        rowid=row[19],
    )


class Store:
    """Read access to a recordings database. Safe while recorders write to it (WAL)."""

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        """``readonly``: a read-only connection, schema left as it is (a server's views)."""
        self.path = Path(path)
        if not self.path.exists():
            raise StoreError(f"no recordings database at {self.path} (record something first)")
        self.conn = connect(self.path, create=False, readonly=readonly)
        if not readonly:
            with contextlib.suppress(sqlite3.OperationalError):  # read-only: read what is there
                migrate(self.conn)

    def dicts(self, sql: str, args: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """The rows of a query as dicts by column name: the one way rows are read as dicts."""
        cur = self.conn.execute(sql, args)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur]

    def close(self) -> None:
        self.conn.close()

    def captures(self, limit: int | None = None) -> list[dict[str, Any]]:
        sql = "SELECT * FROM captures ORDER BY id DESC"
        if limit is not None:
            sql += f" LIMIT {max(0, int(limit))}"
        rows = self.dicts(sql)
        rows.reverse()
        return rows

    def capture(self, ref: str | int | None) -> dict[str, Any]:
        """A capture by id, by uid prefix, or the latest when ``ref`` is None."""
        if ref is None or ref == "latest":
            rows = self.dicts("SELECT * FROM captures ORDER BY id DESC LIMIT 1", [])
            if not rows:
                raise UsageError(f"no captures in {self.path}")
            return rows[0]
        text = str(ref)
        number = _NUMBER.fullmatch(text)
        n = int(text) if number is not None and len(number.group(2)) <= 19 else None
        if number is None:
            rows = [] if text.startswith("-") else self._by_uid(text)
        elif number.group(1):  # -1 = latest, -2 = the one before
            back = None if n is None else -n - 1
            rows = [] if back is None or not fits(back) else self._latest(back)
        else:
            rows = [] if n is None or not fits(n) else self._by_id(n)
            if not rows and len(text) >= _MIN_NUMERIC_PREFIX:
                # no such id: a uid prefix that happens to be all digits; a short number
                # is an id that is gone, never another capture's uid ("rm 1" twice)
                rows = self._by_uid(text)
            if not rows and (n is None or not fits(n)):
                raise UsageError(
                    f"capture {text[:40]!r}: no uid starts with it, and an id is at most "
                    f"{INT64_MAX}"
                )
        if not rows:
            raise UsageError(f"no capture {text!r} in {self.path}")
        return rows[0]

    def _latest(self, back: int) -> list[dict[str, Any]]:
        return self.dicts("SELECT * FROM captures ORDER BY id DESC LIMIT 1 OFFSET ?", [back])

    def _by_id(self, n: int) -> list[dict[str, Any]]:
        return self.dicts("SELECT * FROM captures WHERE id = ?", [n])

    def _by_uid(self, prefix: str) -> list[dict[str, Any]]:
        rows = self.dicts(
            "SELECT * FROM captures WHERE substr(uid, 1, ?) = ? LIMIT 2", [len(prefix), prefix]
        )
        if len(rows) > 1:
            raise UsageError(f"capture {prefix!r} is ambiguous (give more of its uid)")
        return rows

    def frames(
        self,
        capture_id: int,
        *,
        after_seq: int = -1,
        upto_seq: int | None = None,
        limit: int | None = None,
        from_t_ns: int | None = None,
        ended: bool = False,
        where: tuple[str, list[Any]] | None = None,
    ) -> Iterator[StoredFrame]:
        """A capture's frames in order, from a cursor (never all in memory). With ``ended``
        (the capture is over), a request nothing answered is flagged ``unanswered`` (the one
        place that rule is applied); ``where``: an SQL condition, its parameters."""
        columns = _FRAME_COLUMNS + (f", {_UNANSWERED}" if ended else "")
        window, args = frame_window(capture_id, after_seq, upto_seq, from_t_ns)
        sql = f"SELECT {columns} FROM messages WHERE {window}"
        if where is not None:
            sql, args = f"{sql} AND ({where[0]})", [*args, *where[1]]
        sql += " ORDER BY seq"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        for row in self.conn.execute(sql, args):
            yield _stored(row)

    def frames_at(
        self, capture_id: int, seqs: Sequence[int], *, ended: bool = False
    ) -> list[StoredFrame]:
        """The frames of ``capture_id`` numbered ``seqs`` (ascending), flagged as
        :meth:`frames` flags them: the hits of a scan (:mod:`acp_proxy.store.scan`)."""
        columns = _FRAME_COLUMNS + (f", {_UNANSWERED}" if ended else "")
        found: list[StoredFrame] = []
        for i in range(0, len(seqs), 500):
            part = list(seqs[i : i + 500])
            sql = (
                f"SELECT {columns} FROM messages WHERE capture_id = ? AND seq IN ({_marks(part)})"
                " ORDER BY seq"
            )
            found += (_stored(row) for row in self.conn.execute(sql, [capture_id, *part]))
        return found

    def plain_frames(self, capture_id: int, *, upto_seq: int | None = None) -> Iterator[Frame]:
        """The frames alone, in ``seq`` order: what a fold needs, without the derived fields
        (reading six columns instead of twenty is most of the cost of a large capture)."""
        sql = (
            "SELECT seq, direction, t_ns, raw, terminated, opcode FROM messages"
            " WHERE capture_id = ?"
        )
        args: list[Any] = [capture_id]
        if upto_seq is not None:
            sql += " AND seq <= ?"
            args.append(upto_seq)
        directions = {d.value: d for d in Direction}
        opcodes: dict[str | None, Opcode | None] = {o.value: o for o in Opcode}
        opcodes[None] = None
        for seq, direction, t_ns, raw, terminated, opcode in self.conn.execute(
            sql + " ORDER BY seq", args
        ):
            yield Frame(
                seq, directions[direction], t_ns, raw, bool(terminated), opcodes.get(opcode)
            )

    def view_frames(
        self,
        capture_id: int,
        *,
        methods: Collection[str],
        kinds: Collection[str] = (),
        marked: Collection[str] = (),
        markers: Collection[bytes] = (),
        upto_seq: int | None = None,
    ) -> Iterator[tuple[int, int, int, bytes, int | None]]:
        """The frames a view needs (:mod:`acp_proxy.reconstruct.stream`), in ``seq`` order,
        from a cursor: those whose ``method`` (a response's: its request's) is one of
        ``methods``, whose update kind is one of ``kinds``, or one of ``marked`` when the
        bytes hold one of ``markers``. Each as ``(seq, how, t_ns, raw, request_seq)``, ``how``
        being 0 for ``c2a``, 1 for ``a2c``, and 2 for a frame always returned, whose derived
        fields are not to be relied on: a batch, or one read from its head, underivable, a
        binary message."""
        where = [f"method IN ({_marks(methods)})", f"update_kind IN ({_marks(kinds)})", _ODD]
        args: list[Any] = [capture_id, *methods, *kinds]
        if marked and markers:
            held = " OR ".join("instr(raw, ?) > 0" for _ in markers)
            where.insert(2, f"(update_kind IN ({_marks(marked)}) AND ({held}))")
            args += [*marked, *(bytes(m) for m in markers)]
        how = f"CASE WHEN {_ODD} THEN 2 WHEN direction = 'a2c' THEN 1 ELSE 0 END"
        sql = (
            f"SELECT seq, {how}, t_ns, raw, request_seq FROM messages"
            f" WHERE capture_id = ? AND ({' OR '.join(where)})"
        )
        if upto_seq is not None:
            sql += " AND seq <= ?"
            args.append(upto_seq)
        return self.conn.execute(sql + " ORDER BY seq", args)

    def last_mentions(
        self, capture_id: int, column: str, *, upto_seq: int | None = None
    ) -> dict[str, int]:
        """For each id the capture's frames name in ``column`` (``tool_call_id`` or
        ``terminal_id``), the ``seq`` of the last frame that names it."""
        if column not in ("tool_call_id", "terminal_id"):
            raise ValueError(f"no id column {column!r}")
        sql = (
            f"SELECT {column}, MAX(seq) FROM messages WHERE capture_id = ? AND {column} IS NOT NULL"
        )
        args: list[Any] = [capture_id]
        if upto_seq is not None:
            sql += " AND seq <= ?"
            args.append(upto_seq)
        return dict(self.conn.execute(sql + " GROUP BY 1", args).fetchall())

    def frames_after_rowid(self, rowid: int, capture_id: int | None = None) -> list[StoredFrame]:
        """Frames inserted after ``rowid`` (any capture unless given), for ``tail -f``, in
        each capture's ``seq`` order (one transaction may insert a batch's frames in another
        order; callers follow with the largest ``rowid`` returned)."""
        sql = f"SELECT {_FRAME_COLUMNS} FROM messages WHERE id > ?"
        args: list[Any] = [rowid]
        if capture_id is not None:
            sql += " AND capture_id = ?"
            args.append(capture_id)
        sql += " ORDER BY id LIMIT 5000"
        found = [_stored(r) for r in self.conn.execute(sql, args)]
        found.sort(key=lambda f: (f.capture_id, f.seq))
        return found

    def frames_before_rowid(
        self, rowid: int | None, n: int, capture_id: int | None = None
    ) -> list[StoredFrame]:
        """Up to ``n`` frames inserted before ``rowid`` (None: the newest), newest first: a
        page of a backward scan, for the last N frames that match a filter."""
        sql = f"SELECT {_FRAME_COLUMNS} FROM messages WHERE 1"
        args: list[Any] = []
        if rowid is not None:
            sql += " AND id < ?"
            args.append(rowid)
        if capture_id is not None:
            sql += " AND capture_id = ?"
            args.append(capture_id)
        sql += " ORDER BY id DESC LIMIT ?"
        args.append(n)
        return [_stored(r) for r in self.conn.execute(sql, args)]

    def max_rowid(self) -> int:
        return int(self.conn.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0])

    def stderr(self, capture_id: int) -> Iterator[tuple[int, bytes]]:
        """The agent's stderr as read, ``(t_ns, bytes)`` in order, from a cursor."""
        for t, d in self.conn.execute(
            "SELECT t_ns, data FROM stderr WHERE capture_id = ? ORDER BY id", [capture_id]
        ):
            yield t, bytes(d)

    def stderr_after_rowid(self, rowid: int, capture_id: int | None = None) -> list[Any]:
        """``(rowid, capture_id, t_ns, bytes)`` of stderr written after ``rowid``."""
        sql = "SELECT id, capture_id, t_ns, data FROM stderr WHERE id > ?"
        args: list[Any] = [rowid]
        if capture_id is not None:
            sql += " AND capture_id = ?"
            args.append(capture_id)
        return [
            (i, c, t, bytes(d))
            for i, c, t, d in self.conn.execute(sql + " ORDER BY id LIMIT 5000", args)
        ]

    def max_stderr_rowid(self) -> int:
        return int(self.conn.execute("SELECT COALESCE(MAX(id), 0) FROM stderr").fetchone()[0])

    def captures_from(self, ids: list[int], above: int) -> list[dict[str, Any]]:
        """The captures ``ids`` and every capture whose id is above ``above``."""
        marks = ",".join("?" * len(ids))
        sql = "SELECT * FROM captures WHERE id > ?" + (f" OR id IN ({marks})" if ids else "")
        return self.dicts(sql + " ORDER BY id", [above, *ids])

    def unanswered(self, capture_id: int) -> list[tuple[int, str | None]]:
        """``(seq, method)`` of every request of the capture that nothing answered."""
        return [
            (seq, method)
            for seq, method in self.conn.execute(
                f"SELECT seq, method FROM messages WHERE capture_id = ? AND {_UNANSWERED} "
                "ORDER BY seq",
                [capture_id],
            )
        ]

    def events(self, capture_id: int) -> list[dict[str, Any]]:
        return self.dicts(
            "SELECT t_ns, kind, detail FROM events WHERE capture_id = ? ORDER BY id", [capture_id]
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

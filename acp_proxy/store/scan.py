"""Reading a large capture with the least read: scans and counted folds.

What belongs here: :func:`matching_seqs`, which reads a capture's frames as ``(seq, raw)``
alone, in large batches, and runs a test (``show --grep``'s pattern) over each frame's
exact bytes. Building a full frame — twenty columns, whether a request went unanswered —
costs several times the test itself, so a reader scans first and reads whole only the frames
that matched (:meth:`acp_proxy.store.reader.Store.frames_at`). And :func:`fold_rows`: the
frames of a fold that only counts some updates, those left unread, and
:func:`raws_among`, the bytes of the message chunks such a fold left in their frames, read
when their text is asked for. Read-only; never on the forwarding path.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection, Iterator
from typing import Any

__all__ = [
    "BATCH",
    "CHUNK",
    "COUNTED",
    "UNREAD",
    "WHOLE",
    "Row",
    "fold_rows",
    "frame_window",
    "matching_seqs",
    "raws_among",
]

BATCH = 8192
"""Frames read from the cursor at once."""


def frame_window(
    capture_id: int, after_seq: int = -1, upto_seq: int | None = None, from_t_ns: int | None = None
) -> tuple[str, list[Any]]:
    """The condition on ``messages`` selecting a capture's frames after ``after_seq``, up to
    ``upto_seq``, from ``from_t_ns``, and its parameters: one window for every reader."""
    sql = "capture_id = ? AND seq > ?"
    args: list[Any] = [capture_id, after_seq]
    if upto_seq is not None:
        sql += " AND seq <= ?"
        args.append(upto_seq)
    if from_t_ns is not None:
        sql += " AND t_ns >= ?"
        args.append(from_t_ns)
    return sql, args


def matching_seqs(
    conn: sqlite3.Connection,
    capture_id: int,
    test: Callable[[bytes], bool],
    *,
    after_seq: int = -1,
    upto_seq: int | None = None,
    from_t_ns: int | None = None,
    advance: Callable[[int], None] | None = None,
) -> Iterator[list[int]]:
    """The ``seq`` of each frame of ``capture_id`` in the window (after ``after_seq``, up to
    ``upto_seq``, from ``from_t_ns``) whose stored bytes pass ``test``, in ``seq`` order, a
    batch's hits at a time; ``advance`` is told how many frames each batch read."""
    where, args = frame_window(capture_id, after_seq, upto_seq, from_t_ns)
    cur = conn.execute(f"SELECT seq, raw FROM messages WHERE {where} ORDER BY seq", args)
    try:
        while rows := cur.fetchmany(BATCH):
            hits = [seq for seq, raw in rows if test(raw)]
            if advance is not None:
                advance(len(rows))
            if hits:
                yield hits
    finally:
        cur.close()


Row = tuple[int, int, str, int, bytes | None, int, str | None, str | None, str, int]
"""A row of :func:`fold_rows`."""


def fold_rows(
    conn: sqlite3.Connection,
    capture_id: int,
    *,
    counted: Collection[str],
    chunks: Collection[str] = (),
    unread: Collection[str] = (),
    after_seq: int = -1,
    upto_seq: int | None = None,
    runs: bool = False,
) -> Iterator[Row]:
    """The frames of a capture for a fold that only counts the ``session/update`` kinds
    ``counted``, reads the ``chunks`` kinds from their update alone and keeps nothing of
    the methods ``unread`` (after ``after_seq``, up to ``upto_seq``): ``(how, seq,
    direction, t_ns, raw, terminated, opcode, session_id, update_kind, n)`` in ``seq``
    order, as stored (``direction`` and ``opcode`` their text). ``how`` is
    :data:`COUNTED` (``raw`` None: not read) or :data:`CHUNK` for a notification of those
    kinds, :data:`UNREAD` for a frame of those methods (``raw`` not its bytes but what
    pairs it, the JSON array ``[kind, method, msg_id]``), each when the recorder read it
    whole and found nothing odd in it, else :data:`WHOLE`. ``n`` is 1 but with ``runs``:
    a :data:`CHUNK` row then stands for the ``n`` frames from it, its run — each the next
    ``seq``, stored right after the one before, a chunk of the same session and kind —,
    none of them read (``raw`` None): most of a long capture is such runs, and a row costs
    far more than a join."""
    last = None
    if runs:
        window, args = frame_window(capture_id, after_seq, upto_seq)
        count, span, last = conn.execute(
            f"SELECT COUNT(*), MAX(seq) - MIN(seq) + 1, MAX(seq) FROM messages WHERE {window}",
            args,
        ).fetchone()
        runs = count == span  # a run's length is then where the next row begins
    sql, args = _fold_sql(capture_id, (after_seq, upto_seq), counted, chunks, unread, runs)
    cur = conn.execute(sql, args)
    return _runs(cur, last) if runs and last is not None else cur


def _fold_sql(
    capture_id: int,
    window: tuple[int, int | None],
    counted: Collection[str],
    chunks: Collection[str],
    unread: Collection[str],
    runs: bool,
) -> tuple[str, list[Any]]:
    """:func:`fold_rows`' query, of the frames in ``window`` (after its first ``seq``, up to
    its second): with ``runs``, each chunk frame that goes on the run of the one before it
    in the window left out."""
    after_seq, upto_seq = window

    def plain(t: str) -> str:  # a session/update notification the recorder read whole
        return (
            f"{t}.kind = 'notification' AND {t}.method = 'session/update' AND {t}.anomalies IS NULL"
        )

    def chunk(t: str) -> str:
        return f"{plain(t)} AND {t}.update_kind IN ({_marks(chunks)})"

    how = (
        f"CASE WHEN {plain('m')} AND m.update_kind IN ({_marks(counted)}) THEN {COUNTED}"
        f" WHEN {chunk('m')} THEN {CHUNK}"
        f" WHEN m.anomalies IS NULL AND m.method IN ({_marks(unread)}) THEN {UNREAD}"
        f" ELSE {WHOLE} END"
    )
    inner = (
        f"SELECT {how} AS how, m.seq, m.direction, m.t_ns, m.raw, m.terminated, m.opcode,"
        " m.session_id, m.update_kind, m.kind, m.method, m.msg_id FROM messages m"
    )
    args: list[Any] = [*counted, *chunks, *unread]
    if runs:
        inner += (
            " LEFT JOIN messages p ON p.id = m.id - 1 AND p.capture_id = m.capture_id"
            " AND p.seq = m.seq - 1 AND p.seq > ?"
        )
        args.append(after_seq)
    inner += " WHERE m.capture_id = ? AND m.seq > ?"
    args += [capture_id, after_seq]
    if upto_seq is not None:
        inner += " AND m.seq <= ?"
        args.append(upto_seq)
    if runs:
        inner += (
            f" AND NOT ({chunk('m')} AND p.id IS NOT NULL AND {chunk('p')}"
            " AND p.session_id IS m.session_id AND p.update_kind = m.update_kind)"
        )
        args += [*chunks, *chunks]
    unraw = f"{COUNTED}, {CHUNK}" if runs else f"{COUNTED}"
    sql = (  # how is read once more, in raw's one CASE (each use of it is its CASE again)
        f"SELECT how, seq, direction, t_ns, CASE WHEN how IN ({unraw}) THEN NULL"
        f" WHEN how = {UNREAD} THEN json_array(kind, method, msg_id) ELSE raw END,"
        f" terminated, opcode, session_id, update_kind, 1 FROM ({inner} ORDER BY m.seq)"
    )
    return sql, args


def _runs(cur: sqlite3.Cursor, last: int) -> Iterator[Row]:
    """The rows of ``cur``, each chunk's ``n`` its run's length: up to the next row (the
    frames of the window follow one another), or to ``last``."""
    try:
        held: Row | None = None
        for row in cur:
            if held is not None:
                yield (*held[:9], row[1] - held[1])
                held = None
            if row[0] == CHUNK:
                held = row
            else:
                yield row
        if held is not None:
            yield (*held[:9], last - held[1] + 1)
    finally:
        cur.close()


def raws_among(
    conn: sqlite3.Connection, capture_id: int, seqs: Collection[int], update_kinds: Collection[str]
) -> Iterator[tuple[int, bytes]]:
    """``(seq, raw)`` of the frames ``seqs`` of a capture, ``session/update`` notifications
    of the ``update_kinds``, in ``seq`` order: read in one pass from the first to the last
    (the frames a page of turns left unread lie close together)."""
    if not seqs:
        return
    sql = (
        "SELECT seq, raw FROM messages WHERE capture_id = ? AND seq BETWEEN ? AND ?"
        f" AND update_kind IN ({_marks(update_kinds)}) ORDER BY seq"
    )
    cur = conn.execute(sql, [capture_id, min(seqs), max(seqs), *update_kinds])
    try:
        while rows := cur.fetchmany(BATCH):
            yield from ((seq, raw) for seq, raw in rows if seq in seqs)
    finally:
        cur.close()


WHOLE, COUNTED, CHUNK, UNREAD = 0, 1, 2, 3
"""How :func:`fold_rows` hands a frame over."""


def _marks(values: Collection[object]) -> str:
    return ", ".join("?" for _ in values) or "NULL"

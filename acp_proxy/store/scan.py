"""Reading a large capture with the least read: scans and counted folds.

What belongs here: :func:`matching_seqs`, which reads a capture's frames as ``(seq, raw)``
alone, in large batches, and runs a test (``show --grep``'s pattern) over each frame's
exact bytes. Building a full frame — twenty columns, whether a request went unanswered —
costs several times the test itself, so a reader scans first and reads whole only the frames
that matched (:meth:`acp_proxy.store.reader.Store.frames_at`). And :func:`fold_rows`: the
frames of a fold that only counts some updates, those left unread. Read-only; never on the
forwarding path.
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
    "fold_rows",
    "frame_window",
    "matching_seqs",
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


def fold_rows(
    conn: sqlite3.Connection,
    capture_id: int,
    *,
    counted: Collection[str],
    chunks: Collection[str] = (),
    unread: Collection[str] = (),
    upto_seq: int | None = None,
) -> Iterator[tuple[int, int, str, int, bytes | None, int, str | None, str | None, str]]:
    """The frames of a capture for a fold that only counts the ``session/update`` kinds
    ``counted``, reads the ``chunks`` kinds from their update alone and keeps nothing of
    the methods ``unread``: ``(how, seq, direction, t_ns, raw, terminated, opcode,
    session_id, update_kind)`` in ``seq`` order, as stored (``direction`` and ``opcode``
    their text), from a cursor. ``how`` is :data:`COUNTED` (``raw`` None: not read) or
    :data:`CHUNK` for a notification of those kinds, :data:`UNREAD` (``raw`` None) for a
    frame of those methods, each when the recorder read it whole and found nothing odd in
    it, else :data:`WHOLE`."""
    plain = "kind = 'notification' AND method = 'session/update' AND anomalies IS NULL"
    how = (
        f"CASE WHEN {plain} AND update_kind IN ({_marks(counted)}) THEN {COUNTED}"
        f" WHEN {plain} AND update_kind IN ({_marks(chunks)}) THEN {CHUNK}"
        f" WHEN anomalies IS NULL AND method IN ({_marks(unread)}) THEN {UNREAD}"
        f" ELSE {WHOLE} END"
    )
    inner = (
        f"SELECT {how} AS how, seq, direction, t_ns, raw, terminated, opcode, session_id,"
        " update_kind FROM messages WHERE capture_id = ?"
    )
    args: list[Any] = [*counted, *chunks, *unread, capture_id]
    if upto_seq is not None:
        inner += " AND seq <= ?"
        args.append(upto_seq)
    sql = (
        f"SELECT how, seq, direction, t_ns, CASE WHEN how IN ({COUNTED}, {UNREAD}) THEN NULL"
        " ELSE raw END,"
        f" terminated, opcode, session_id, update_kind FROM ({inner} ORDER BY seq)"
    )
    return conn.execute(sql, args)


WHOLE, COUNTED, CHUNK, UNREAD = 0, 1, 2, 3
"""How :func:`fold_rows` hands a frame over."""


def _marks(values: Collection[object]) -> str:
    return ", ".join("?" for _ in values) or "NULL"

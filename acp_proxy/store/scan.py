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

from acp_proxy.protocol.frames import Direction, Opcode

__all__ = ["BATCH", "fold_rows", "matching_seqs"]

BATCH = 8192
"""Frames read from the cursor at once."""


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
    sql = "SELECT seq, raw FROM messages WHERE capture_id = ? AND seq > ?"
    args: list[Any] = [capture_id, after_seq]
    if upto_seq is not None:
        sql += " AND seq <= ?"
        args.append(upto_seq)
    if from_t_ns is not None:
        sql += " AND t_ns >= ?"
        args.append(from_t_ns)
    cur = conn.execute(sql + " ORDER BY seq", args)
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
    upto_seq: int | None = None,
) -> Iterator[tuple[int, Direction, int, bytes | None, bool, Opcode | None, str | None, str]]:
    """The frames of a capture for a fold that only counts the ``session/update`` kinds
    ``counted``: ``(seq, direction, t_ns, raw, terminated, opcode, session_id,
    update_kind)`` in ``seq`` order, ``raw`` None (not read) for a notification of one of
    those kinds the recorder read whole and found nothing odd in."""
    light = (
        f"kind = 'notification' AND method = 'session/update' AND anomalies IS NULL"
        f" AND update_kind IN ({', '.join('?' for _ in counted)})"
    )
    sql = (
        f"SELECT seq, direction, t_ns, CASE WHEN {light} THEN NULL ELSE raw END, terminated,"
        f" opcode, session_id, update_kind FROM messages WHERE capture_id = ?"
    )
    args: list[Any] = [*counted, capture_id]
    if upto_seq is not None:
        sql += " AND seq <= ?"
        args.append(upto_seq)
    directions = {d.value: d for d in Direction}
    opcodes: dict[str | None, Opcode | None] = {o.value: o for o in Opcode}
    opcodes[None] = None
    for seq, direction, t_ns, raw, terminated, opcode, sid, kind in conn.execute(
        sql + " ORDER BY seq", args
    ):
        yield (seq, directions[direction], t_ns, raw, bool(terminated), opcodes.get(opcode),
               sid, kind)  # fmt: skip

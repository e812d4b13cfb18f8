"""Scanning a capture's stored bytes for the frames a test keeps.

What belongs here: :func:`matching_seqs`, which reads a capture's frames as ``(seq, raw)``
alone, in large batches, and runs a test (``show --grep``'s pattern) over each frame's
exact bytes. Building a full frame — twenty columns, whether a request went unanswered —
costs several times the test itself, so a reader scans first and reads whole only the frames
that matched (:meth:`acp_proxy.store.reader.Store.frames_at`). Read-only; never on the
forwarding path.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["BATCH", "matching_seqs"]

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

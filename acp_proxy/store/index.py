"""The full-text index: what text of frames, stderr and events is indexed, and catching up.

What belongs here: the words each recorded thing is indexed by (:func:`index_text` for a
frame, :func:`stderr_text`, :func:`event_text`), and bringing the index up to date
(:func:`catch_up`). Frames are in the contentless FTS5 table ``frames_fts`` (migration 4)
keyed by ``messages.id``; the agent's stderr and the capture events — where the cause of a
failure usually is — in ``notes_fts`` (migration 6), keyed by ``2 × stderr.id`` and
``2 × events.id + 1``. The text stays in the rows; ``search_index`` says, per source, how far
the index got. The recorder never touches it: the readers that search index what was
recorded since the last time, in short write transactions.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from acp_proxy.events import describe
from acp_proxy.sgr import strip

__all__ = [
    "SOURCES",
    "IndexedTable",
    "catch_up",
    "event_text",
    "index_text",
    "indexed_upto",
    "pending",
    "stderr_text",
]

_PARSED_MAX = 4 << 20
"""Frames larger than this are indexed as text, not walked as JSON."""
TEXT_MAX = 1 << 20
"""At most this many characters of a frame are indexed."""
_BATCH_BYTES = 8 << 20
"""A batch stops growing at this many bytes."""


def _walk(v: Any, out: list[str]) -> None:
    if isinstance(v, str):
        out.append(v)
    elif isinstance(v, dict):
        for k, x in v.items():
            out.append(str(k))
            _walk(x, out)
    elif isinstance(v, list):
        for x in v:
            _walk(x, out)
    elif v is not None and not isinstance(v, bool):
        out.append(str(v))


def index_text(raw: bytes) -> str:
    """The words of a frame: for JSON, its keys and values (so a ``\\n`` escape does not glue
    two words together); else the bytes as text. Invalid UTF-8 becomes U+FFFD."""
    if len(raw) <= _PARSED_MAX:
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
        else:
            out: list[str] = []
            _walk(value, out)
            return "\n".join(out)[:TEXT_MAX]
    return raw[: TEXT_MAX * 4].decode("utf-8", errors="replace")[:TEXT_MAX]


def stderr_text(data: bytes) -> str:
    """The words of what the agent wrote on stderr: its colours taken out (``\\x1b[31mERROR``
    is the word ``ERROR``)."""
    return strip(data[: TEXT_MAX * 4].decode("utf-8", errors="replace"))[:TEXT_MAX]


def event_text(kind: str, detail: str | bytes | None) -> str:
    """The words of an event: its readable line, then every key and value of its detail."""
    value: Any = None
    if detail:
        try:
            value = orjson.loads(detail)
        except orjson.JSONDecodeError:
            value = detail if isinstance(detail, str) else detail.decode("utf-8", "replace")
    out = [describe(kind, value if isinstance(value, dict) else None)]
    _walk(value, out)
    return "\n".join(out)[:TEXT_MAX]


@dataclass(frozen=True, slots=True)
class IndexedTable:
    """One kind of row the index covers: its table, its FTS table and how its rowids map."""

    name: str  # its row in search_index
    table: str
    fts: str
    columns: str  # what is read to make its text
    rowid: Callable[[int], int]  # the row's id -> its FTS rowid
    text: Callable[[tuple[Any, ...]], str]


SOURCES = (
    IndexedTable(
        "frames",
        "messages",
        "frames_fts",
        f"CASE WHEN size > {TEXT_MAX * 4} THEN substr(raw, 1, {TEXT_MAX * 4}) ELSE raw END",
        lambda i: i,
        lambda row: index_text(bytes(row[0])),
    ),
    IndexedTable(
        "stderr",
        "stderr",
        "notes_fts",
        "data",
        lambda i: 2 * i,
        lambda row: stderr_text(bytes(row[0])),
    ),
    IndexedTable(
        "events",
        "events",
        "notes_fts",
        "kind, detail",
        lambda i: 2 * i + 1,
        lambda row: event_text(str(row[0]), row[1]),
    ),
)


def indexed_upto(conn: sqlite3.Connection, source: str = "frames") -> int:
    """The last row of ``source`` in the index (0 for none, -1 without the index)."""
    try:
        row = conn.execute("SELECT upto FROM search_index WHERE name = ?", [source]).fetchone()
    except sqlite3.OperationalError:
        return -1
    return int(row[0]) if row else -1


def pending(conn: sqlite3.Connection) -> int:
    """How many frames, stderr writes and events are recorded but not yet indexed."""
    total = 0
    for src in SOURCES:
        upto = indexed_upto(conn, src.name)
        if upto < 0:
            continue
        sql = f"SELECT COUNT(*) FROM {src.table} WHERE id > ?"
        total += int(conn.execute(sql, [upto]).fetchone()[0])
    return total


def catch_up(
    conn: sqlite3.Connection,
    *,
    batch: int = 500,
    limit: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Index what was recorded since the last call; returns how many rows were indexed.

    ``conn`` must be writable. Each batch is read and turned into text first, then written
    in one short ``BEGIN IMMEDIATE`` transaction that checks nobody else indexed the same
    rows meanwhile (several readers may catch up at once). ``limit`` bounds the rows
    indexed by this call."""
    done = 0
    for src in SOURCES:
        for n in _catch_up(conn, src, batch, None if limit is None else limit - done):
            done += n
            if progress is not None:
                progress(done)
        if limit is not None and done >= limit:
            break
    return done


def _catch_up(
    conn: sqlite3.Connection, src: IndexedTable, batch: int, limit: int | None
) -> Iterator[int]:
    done = 0
    while limit is None or done < limit:
        upto = indexed_upto(conn, src.name)
        if upto < 0:
            return
        n = batch if limit is None else min(batch, limit - done)
        entries: list[tuple[int, str]] = []
        size = 0
        last = upto
        cur = conn.execute(
            f"SELECT id, {src.columns} FROM {src.table} WHERE id > ? ORDER BY id LIMIT ?",
            [upto, n],
        )
        for rowid, *values in cur:
            text = src.text(tuple(values))
            entries.append((src.rowid(rowid), text))
            last = rowid
            size += len(text)
            if size >= _BATCH_BYTES:
                break
        cur.close()
        if not entries:
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            if indexed_upto(conn, src.name) != upto:  # another reader indexed these meanwhile
                conn.execute("ROLLBACK")
                continue
            conn.executemany(f"INSERT INTO {src.fts} (rowid, text) VALUES (?, ?)", entries)
            conn.execute("UPDATE search_index SET upto = ? WHERE name = ?", [last, src.name])
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        done += len(entries)
        yield len(entries)

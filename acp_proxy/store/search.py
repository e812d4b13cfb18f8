"""Full-text search over the frames of every capture.

What belongs here: what text of a frame is indexed (:func:`index_text`), bringing the index
up to date (:func:`catch_up`), and answering a query (:func:`search`). The index is the
contentless FTS5 table ``frames_fts`` of migration 4, keyed by ``messages.id``; the text
itself stays in ``messages.raw``. The recorder never touches it: the readers that search
(``acp-proxy search``, ``acp-proxy ui``) index what was recorded since the last time, in
short write transactions, so the recorder's insert path costs what it cost before
(``docs/ui.md`` has the measurements).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from acp_proxy.errors import UsageError

__all__ = [
    "Hit",
    "catch_up",
    "fts_query",
    "index_text",
    "indexed_upto",
    "pending",
    "search",
    "snippet",
    "terms",
]

_PARSED_MAX = 4 << 20
"""Frames larger than this are indexed as text, not walked as JSON."""
_TEXT_MAX = 1 << 20
"""At most this many characters of a frame are indexed."""
_BATCH_BYTES = 8 << 20
"""A batch stops growing at this many bytes of frames."""
_WORD = re.compile(r"\w+")


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
            return "\n".join(out)[:_TEXT_MAX]
    return raw[: _TEXT_MAX * 4].decode("utf-8", errors="replace")[:_TEXT_MAX]


def terms(query: str) -> list[str]:
    """The words of a query, in order (what the index matches, case and accents aside)."""
    return _WORD.findall(query)


def fts_query(query: str) -> str:
    """An FTS5 query for ``query``: every word must be there; words written together (for
    example ``session/prompt`` or ``"exit code"``) form a phrase; a trailing ``*`` makes a
    prefix. Each piece is handed to FTS5 as a quoted string, so its tokenizer, the one
    that indexed the frames, splits it into words, and nothing of FTS5's own syntax gets
    through."""
    parts = []
    query = re.sub(r"[\x00-\x1f\x7f]", " ", query)  # controls separate words, as in the index
    for chunk in re.findall(r'"[^"]*"?|[^\s"]+', query):
        prefix = chunk.endswith("*") and not chunk.startswith('"')
        body = chunk.strip('"').rstrip("*") if not chunk.startswith('"') else chunk.strip('"')
        if not any(ch.isalnum() or ord(ch) > 127 for ch in body):
            continue
        phrase = '"' + body.replace('"', '""') + '"'
        parts.append(phrase + ("*" if prefix else ""))
    if not parts:
        raise UsageError(f"nothing to search for in {query!r} (give a word)")
    return " ".join(parts)


def indexed_upto(conn: sqlite3.Connection) -> int:
    """The last ``messages.id`` in the index (0 for none, -1 without the index table)."""
    try:
        row = conn.execute("SELECT upto FROM search_index WHERE name = 'frames'").fetchone()
    except sqlite3.OperationalError:
        return -1
    return int(row[0]) if row else 0


def pending(conn: sqlite3.Connection) -> int:
    """How many frames are recorded but not yet indexed."""
    upto = indexed_upto(conn)
    row = conn.execute("SELECT COUNT(*) FROM messages WHERE id > ?", [max(upto, 0)]).fetchone()
    return int(row[0])


def catch_up(
    conn: sqlite3.Connection,
    *,
    batch: int = 500,
    limit: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Index the frames recorded since the last call; returns how many were indexed.

    ``conn`` must be writable. Each batch is read and turned into text first, then written
    in one short ``BEGIN IMMEDIATE`` transaction that checks nobody else indexed the same
    frames meanwhile (several readers may catch up at once). ``limit`` bounds the frames
    indexed by this call.
    """
    done = 0
    while limit is None or done < limit:
        upto = indexed_upto(conn)
        if upto < 0:
            return done
        n = batch if limit is None else min(batch, limit - done)
        entries: list[tuple[int, str]] = []
        size = 0
        cur = conn.execute(
            "SELECT id, CASE WHEN size > ?1 THEN substr(raw, 1, ?1) ELSE raw END "
            "FROM messages WHERE id > ?2 ORDER BY id LIMIT ?3",
            [_TEXT_MAX * 4, upto, n],
        )
        for rowid, raw in cur:
            entries.append((rowid, index_text(bytes(raw))))
            size += len(raw)
            if size >= _BATCH_BYTES:
                break
        cur.close()
        if not entries:
            return done
        conn.execute("BEGIN IMMEDIATE")
        try:
            if indexed_upto(conn) != upto:  # another reader indexed these meanwhile
                conn.execute("ROLLBACK")
                continue
            conn.executemany("INSERT INTO frames_fts (rowid, text) VALUES (?, ?)", entries)
            conn.execute("UPDATE search_index SET upto = ? WHERE name = 'frames'", [entries[-1][0]])
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        done += len(entries)
        if progress is not None:
            progress(done)
    return done


@dataclass(frozen=True, slots=True)
class Hit:
    """A frame the query matched, with the piece of its text around the first match."""

    rowid: int
    capture_id: int
    seq: int
    direction: str
    t_ns: int
    kind: str
    method: str | None
    before: str
    match: str
    after: str

    def as_json(self) -> dict[str, Any]:
        return {
            "capture": self.capture_id,
            "seq": self.seq,
            "direction": self.direction,
            "t_ms": round(self.t_ns / 1e6, 3),
            "kind": self.kind,
            "method": self.method,
            "before": self.before,
            "match": self.match,
            "after": self.after,
            "rowid": self.rowid,
        }


def snippet(text: str, words: list[str], width: int = 60) -> tuple[str, str, str]:
    """``text`` around the first of ``words`` found in it (case-insensitively): what comes
    before, the match, what comes after, each on one line."""
    best: re.Match[str] | None = None
    for w in words:
        m = re.search(re.escape(w), text, flags=re.IGNORECASE)
        if m is not None and (best is None or m.start() < best.start()):
            best = m
    if best is None:
        return "", "", _flat(text[: width * 2])
    before = text[max(0, best.start() - width) : best.start()]
    after = text[best.end() : best.end() + width]
    return _flat(before), _flat(best.group(0)), _flat(after)


def _flat(s: str) -> str:
    return re.sub(r"\s+", " ", s)


def search(
    conn: sqlite3.Connection,
    query: str,
    *,
    capture_id: int | None = None,
    limit: int = 50,
    before_rowid: int | None = None,
) -> list[Hit]:
    """The frames that match ``query``, newest first (``before_rowid`` pages on)."""
    match = fts_query(query)
    words = terms(query)
    sql = (
        "SELECT m.id, m.capture_id, m.seq, m.direction, m.t_ns, m.kind, m.method, m.raw "
        "FROM frames_fts f JOIN messages m ON m.id = f.rowid WHERE frames_fts MATCH ?"
    )
    args: list[Any] = [match]
    if before_rowid is not None:
        sql += " AND f.rowid < ?"
        args.append(before_rowid)
    if capture_id is not None:
        sql += " AND m.capture_id = ?"
        args.append(capture_id)
    sql += " ORDER BY f.rowid DESC LIMIT ?"
    args.append(int(limit))
    try:
        rows = conn.execute(sql, args).fetchall()
    except sqlite3.OperationalError as e:
        if "no such table" in str(e):
            raise UsageError("this database has no search index yet (open it writable once)") from e
        raise UsageError(f"cannot search for {query!r}: {e}") from e
    hits = []
    for rowid, cid, seq, direction, t_ns, kind, method, raw in rows:
        before, found, after = snippet(index_text(bytes(raw)), words)
        hits.append(Hit(rowid, cid, seq, direction, t_ns, kind, method, before, found, after))
    return hits

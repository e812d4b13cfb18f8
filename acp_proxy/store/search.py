"""Full-text search over every capture: its frames, the agent's stderr and the events.

What belongs here: reading a query (:func:`fts_query`: words, phrases, prefixes, nothing of
FTS5's own syntax), answering it from the two indexes :mod:`acp_proxy.store.index` keeps —
frames, and stderr with events — merged newest first and paged with a :class:`Cursor`, and
the piece of each hit's text around its match (:func:`snippet`, a phrase matched whole).
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from typing import Any

from acp_proxy.errors import UsageError
from acp_proxy.store.index import attach, event_text, index_text, stderr_text

__all__ = ["Cursor", "Hit", "Results", "fts_query", "search", "snippet", "terms"]

_WORD = re.compile(r"\w+")
_LIMIT_MAX = 100_000  # hits in one page at the most


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


@dataclass(frozen=True, slots=True)
class Hit:
    """Something the query matched — a frame, a write of the agent's stderr or a capture
    event — with the piece of its text around the match."""

    source: str  # "frame", "stderr" or "event"
    rowid: int  # its row in messages, stderr or events
    capture_id: int
    seq: int | None  # frames only
    direction: str | None  # frames only
    t_ns: int
    kind: str  # a frame's kind, "stderr", or the event's kind
    method: str | None
    before: str
    match: str
    after: str

    def as_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
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


def snippet(text: str, query: str, width: int = 60) -> tuple[str, str, str]:
    """``text`` around the first match of ``query`` (case-insensitively): what comes before,
    the match, what comes after, each on one line. A phrase (``authentication required``,
    ``session/prompt``) matches as a whole — its words with anything but words between them
    — before any single word of it does."""
    best: re.Match[str] | None = None
    for pattern in _patterns(query):
        for m in pattern.finditer(text):
            if best is None or m.start() < best.start():
                best = m
            break
        if best is not None:
            break
    if best is None:
        return "", "", _flat(text[: width * 2])
    before = text[max(0, best.start() - width) : best.start()]
    after = text[best.end() : best.end() + width]
    return _flat(before), _flat(best.group(0)), _flat(after)


def _patterns(query: str) -> list[re.Pattern[str]]:
    """What to look for in a hit's text, best first: each phrase of the query whole, then
    each word."""
    phrases = []
    for chunk in re.findall(r'"[^"]*"?|[^\s"]+', query):
        words = terms(chunk)
        if len(words) > 1:
            phrases.append(r"\W+".join(re.escape(w) for w in words))
    whole = terms(query)
    if len(whole) > 1:
        phrases.insert(0, r"\W+".join(re.escape(w) for w in whole))
    singles = [re.escape(w) for w in whole]
    return [re.compile(p, re.IGNORECASE) for p in dict.fromkeys([*phrases, *singles])]


def _flat(s: str) -> str:
    return re.sub(r"\s+", " ", s)


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where the next page of a search starts: below these rowids of each index."""

    frames: int | None = None
    notes: int | None = None

    def token(self) -> str:
        frames = "" if self.frames is None else str(self.frames)
        notes = "" if self.notes is None else str(self.notes)
        return f"{frames}.{notes}"

    @classmethod
    def parse(cls, token: str | None) -> Cursor:
        """A cursor from :meth:`token` (a bare number is a frame rowid, as before)."""
        if not token:
            return cls()
        frames, _, notes = token.partition(".")
        try:
            at = cls(int(frames) if frames else None, int(notes) if notes else None)
        except ValueError as e:
            raise UsageError(f"not a search position: {token!r}") from e
        if any(x is not None and not 0 <= x < 1 << 63 for x in (at.frames, at.notes)):
            raise UsageError(f"not a search position: {token!r}")
        return at


class Results(list[Hit]):
    """A page of hits; :attr:`next` is where the next page starts (None: there is none)."""

    next: Cursor | None = None


def search(
    conn: sqlite3.Connection,
    query: str,
    *,
    capture_id: int | None = None,
    limit: int = 50,
    after: Cursor | None = None,
) -> Results:
    """What matches ``query`` — frames, stderr and events — newest first (a capture's
    newest first, then the older captures), at most ``limit``, with where the next page
    starts."""
    match = fts_query(query)
    if not attach(conn):
        return Results()  # nothing indexed yet (pending says how much is to come)
    at = after or Cursor()
    limit = max(1, min(limit, _LIMIT_MAX))
    try:
        # one more than a page from each: whether there is a next page
        frames = _frames(conn, match, capture_id, limit + 1, at.frames)
        try:
            notes = _notes(conn, match, capture_id, limit + 1, at.notes)
        except sqlite3.OperationalError as e:
            if "no such table" not in str(e):
                raise
            notes = []  # a database not yet migrated to 6: frames only, until it is
    except sqlite3.OperationalError as e:
        if "no such table" in str(e):
            return Results()  # nothing indexed yet
        raise UsageError(f"cannot search for {query!r}: {e}") from e
    hits = Results(_hit(conn, row, query) for row in _merge(frames, notes, limit))
    if len(frames) + len(notes) > len(hits):
        last_frame = min((h.rowid for h in hits if h.source == "frame"), default=at.frames)
        last_note = min((_fts_rowid(h) for h in hits if h.source != "frame"), default=at.notes)
        hits.next = Cursor(last_frame, last_note)
    return hits


_Row = tuple[str, int, int, int]  # source, capture id, t_ns, rowid


def _frames(
    conn: sqlite3.Connection, match: str, cid: int | None, limit: int, below: int | None
) -> list[_Row]:
    sql = (
        "SELECT m.capture_id, m.t_ns, m.id FROM search.frames_fts f "
        "JOIN messages m ON m.id = f.rowid WHERE frames_fts MATCH ?"
    )
    args: list[Any] = [match]
    if below is not None:
        sql += " AND f.rowid < ?"
        args.append(below)
    if cid is not None:
        sql += " AND m.capture_id = ?"
        args.append(cid)
    sql += " ORDER BY f.rowid DESC LIMIT ?"
    args.append(int(limit))
    return [("frame", c, t, i) for c, t, i in conn.execute(sql, args)]


def _notes(
    conn: sqlite3.Connection, match: str, cid: int | None, limit: int, below: int | None
) -> list[_Row]:
    sql = (
        "SELECT f.rowid, COALESCE(s.capture_id, e.capture_id), COALESCE(s.t_ns, e.t_ns) "
        "FROM search.notes_fts f "
        "LEFT JOIN stderr s ON f.rowid % 2 = 0 AND s.id = f.rowid / 2 "
        "LEFT JOIN events e ON f.rowid % 2 = 1 AND e.id = f.rowid / 2 "
        "WHERE notes_fts MATCH ?"
    )
    args: list[Any] = [match]
    if below is not None:
        sql += " AND f.rowid < ?"
        args.append(below)
    if cid is not None:
        sql += " AND COALESCE(s.capture_id, e.capture_id) = ?"
        args.append(cid)
    sql += " ORDER BY f.rowid DESC LIMIT ?"
    args.append(int(limit))
    return [
        ("stderr" if r % 2 == 0 else "event", c, t, r)
        for r, c, t in conn.execute(sql, args)
        if c is not None
    ]


def _merge(a: list[_Row], b: list[_Row], limit: int) -> list[_Row]:
    """Up to ``limit`` rows of both lists, newest first, each list taken in its own order
    (so what a page takes of each index is a run from its top, and the cursor exact)."""
    out: list[_Row] = []
    i = j = 0
    while len(out) < limit and (i < len(a) or j < len(b)):
        if j >= len(b) or (i < len(a) and (a[i][1], a[i][2]) >= (b[j][1], b[j][2])):
            out.append(a[i])
            i += 1
        else:
            out.append(b[j])
            j += 1
    return out


def _fts_rowid(h: Hit) -> int:
    return 2 * h.rowid + (1 if h.source == "event" else 0)


def _hit(conn: sqlite3.Connection, row: _Row, query: str) -> Hit:
    source, cid, t_ns, rowid = row
    if source == "frame":
        seq, direction, kind, method, raw = conn.execute(
            "SELECT seq, direction, kind, method, raw FROM messages WHERE id = ?", [rowid]
        ).fetchone()
        before, found, after = snippet(index_text(bytes(raw)), query)
        return Hit("frame", rowid, cid, seq, direction, t_ns, kind, method, before, found, after)
    if source == "stderr":
        (data,) = conn.execute("SELECT data FROM stderr WHERE id = ?", [rowid // 2]).fetchone()
        before, found, after = snippet(stderr_text(bytes(data)), query)
        return Hit("stderr", rowid // 2, cid, None, None, t_ns, "stderr", None, before, found,
                   after)  # fmt: skip
    kind, detail = conn.execute(
        "SELECT kind, detail FROM events WHERE id = ?", [rowid // 2]
    ).fetchone()
    before, found, after = snippet(event_text(str(kind), detail), query)
    return Hit("event", rowid // 2, cid, None, None, t_ns, str(kind), None, before, found, after)

"""What the web inspector's JSON routes answer.

What belongs here: turning a read-only :class:`~acp_proxy.store.reader.Store` into the
values the page shows — the capture list, a page of a capture's timeline, one frame in
detail, search hits and the exports, and a capture's log (the agent's stderr and the
events); the reconstruction views (at the end or at a frame: ``--at``) are
:mod:`acp_proxy.ui.folds`' and the state at a frame :mod:`acp_proxy.ui.at_frame`'s,
re-exported here. The rules are the other
packages': summaries and filters from
:mod:`acp_proxy.text`, the fold and its views from :mod:`acp_proxy.reconstruct`,
the exports from :mod:`acp_proxy.export`, search from :mod:`acp_proxy.store.search`.
Nothing here writes HTML: the page renders these values as text.
"""

from __future__ import annotations

from typing import Any

import orjson

from acp_proxy.errors import UsageError
from acp_proxy.protocol.jsonrpc import decode
from acp_proxy.reconstruct.timing import ms
from acp_proxy.store.endings import ending_events
from acp_proxy.store.liveness import capture_state
from acp_proxy.store.reader import Store, StoredFrame
from acp_proxy.store.search import Cursor, search, terms
from acp_proxy.text.captures import capture_row
from acp_proxy.text.log import log_entries
from acp_proxy.ui import folds as ui_folds
from acp_proxy.ui.at_frame import STATE_ITEMS, state_json
from acp_proxy.ui.folds import (
    FOLD_MAX,
    PARTED,
    PARTS,
    STREAMED,
    VIEWS,
    Folds,
    check_foldable,
)
from acp_proxy.ui.frames import PAGE, frame_row, frames_page

__all__ = [
    "FOLD_MAX",
    "PAGE",
    "PARTED",
    "PARTS",
    "STATE_ITEMS",
    "STREAMED",
    "VIEWS",
    "Folds",
    "capture_json",
    "capture_row_live",
    "captures_json",
    "check_foldable",
    "frame_detail",
    "frame_row",
    "frames_page",
    "log_json",
    "search_json",
    "state_json",
]

_RAW_SHOWN = 256 * 1024
"""Bytes of one frame shipped to the page (the exports have them all)."""


def capture_row_live(
    c: dict[str, Any], events: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A capture as the list shows it, with whether it is being recorded now (``events``:
    those that say who ended it)."""
    row = capture_row(c, events or ())
    state = capture_state(c)
    row.update(
        state=state,
        live=state in ("recording", "finishing"),
        cwd=c.get("cwd"),
        listen_url=c.get("listen_url"),
        upstream_url=c.get("upstream_url"),
        ended_at=c.get("ended_at"),
        lost_count=c.get("lost_count", 0),
        lost_bytes=c.get("lost_bytes", 0),
        end_reason=c.get("end_reason"),
    )
    return row


def captures_json(store: Store) -> list[dict[str, Any]]:
    """Every capture, newest first, with whether it is being recorded."""
    ends = ending_events(
        store,
    )
    return [capture_row_live(c, ends.get(c["id"])) for c in reversed(store.captures())]


def capture_json(store: Store, ref: str) -> dict[str, Any]:
    """A capture's header: what the list shows, and its last seq (an index look-up: a
    capture page opens in the same time whatever its size)."""
    c = store.capture(ref)
    row = capture_row_live(c, ending_events(store, [c["id"]]).get(c["id"]))
    last = store.conn.execute(
        "SELECT MAX(seq) FROM messages WHERE capture_id = ?", [c["id"]]
    ).fetchone()[0]
    row["last_seq"] = -1 if last is None else last
    end = store.conn.execute(
        "SELECT t_ns FROM messages WHERE capture_id = ? AND seq = ?", [c["id"], last]
    ).fetchone()
    row["span_ms"] = ms(end[0]) if end else 0.0  # the time axis of the waterfall
    row["fold_max"] = ui_folds.FOLD_MAX  # past it, the exports of the whole fold are refused
    tail = store.conn.execute(
        "SELECT t_ns, data FROM stderr WHERE capture_id = ? ORDER BY id DESC LIMIT 5", [c["id"]]
    ).fetchall()
    said = log_entries([(t, bytes(d)) for t, d in reversed(tail)], [])
    row["last_stderr"] = said[-_LAST_WORDS:]  # where the cause of a failure usually is
    row["chain"] = chain_json(store, c)
    return row


def chain_json(store: Store, c: dict[str, Any]) -> dict[str, Any] | None:
    """The proxy chain ``c`` is a capture of (docs/protocol.md §13.4): its id, which hop
    ``c`` is, and every hop (capture id and role); None outside any chain."""
    from acp_proxy.store.chains import chain_of

    found = chain_of(store, c)
    if found is None:
        return None
    hops = [{"capture": h.capture["id"], "role": h.role} for h in found.hops]
    return {"id": found.id, "hop": found.index_of(c["id"]), "hops": hops}


_LAST_WORDS = 5
LOG_PAGE = 500
"""Entries in one page of a capture's log."""


def log_json(
    store: Store, capture_id: int, offset: int = 0, limit: int = LOG_PAGE
) -> dict[str, Any]:
    """The capture's stderr lines and events in time order, a page at ``offset``."""
    entries = log_entries(store.stderr(capture_id), store.events(capture_id))
    page = entries[offset : offset + max(1, min(limit, 5000))]
    end = offset + len(page)
    return {"entries": page, "total": len(entries), "next": end if end < len(entries) else None}


def _partner(store: Store, f: StoredFrame) -> dict[str, Any] | None:
    if f.request_seq is not None:
        return {"role": "request", "seq": f.request_seq, "latency_ms": ms(f.latency_ns)}
    if f.kind == "request":
        row = store.conn.execute(
            "SELECT seq, latency_ns, kind FROM messages WHERE capture_id = ? AND request_seq = ?",
            [f.capture_id, f.seq],
        ).fetchone()
        if row is not None:
            return {"role": "response", "seq": row[0], "latency_ms": ms(row[1]), "kind": row[2]}
    return None


def frame_detail(store: Store, capture_id: int, seq: int) -> dict[str, Any]:
    """One frame: its line, pretty JSON, exact bytes (as text, and hex when they are not
    UTF-8 text) and its request or response."""
    found = list(store.frames(capture_id, after_seq=seq - 1, upto_seq=seq))
    if not found:
        raise UsageError(f"no frame {seq} in capture {capture_id}")
    f = found[0]
    raw = f.raw[:_RAW_SHOWN]
    row = frame_row(f)
    try:
        raw.decode("utf-8")
        utf8 = True
    except UnicodeDecodeError:
        utf8 = False
    value = decode(f.raw) if len(f.raw) <= _RAW_SHOWN else None
    pretty = None
    if value is not None or f.raw.strip() == b"null":
        pretty = orjson.dumps(value, option=orjson.OPT_INDENT_2, default=str).decode()
    row.update(
        pretty=pretty,
        text=raw.decode("utf-8", errors="backslashreplace"),
        hex=None if utf8 and f.opcode_text != "binary" else raw.hex(" "),
        truncated=len(f.raw) > _RAW_SHOWN,
        terminated=f.frame.terminated,
        partner=_partner(store, f),
    )
    return row


def search_json(
    store: Store,
    query: str,
    *,
    capture_id: int | None = None,
    limit: int = 50,
    before: str | None = None,
) -> dict[str, Any]:
    """Hits in frames, stderr and events; ``next`` is the position of the next page (None:
    these are all)."""
    hits = search(
        store.conn,
        query,
        capture_id=capture_id,
        limit=max(1, min(limit, 500)),
        after=Cursor.parse(before),
    )
    out: dict[str, Any] = {
        "query": query,
        "terms": terms(query),
        "hits": [h.as_json() for h in hits],
        "next": hits.next.token() if hits.next is not None else None,
    }
    if before is None:  # the first page says how many there are, up to COUNT_MAX
        counted = search(store.conn, query, capture_id=capture_id, limit=COUNT_MAX)
        out["count"] = len(counted)
        out["at_least"] = counted.next is not None
    return out


COUNT_MAX = 1000
"""Search hits counted at most: past it the count says "at least"."""

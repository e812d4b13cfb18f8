"""A capture's timeline, a page at a time, for the inspector.

What belongs here: one line of the timeline (:func:`frame_row`), with what the waterfall
column draws — a request's ``end_ms`` (when its answer came) on the capture's time axis —
and a page of the frames that pass the filters (:func:`frames_page`). A filter expression
(:class:`~acp_proxy.text.timeline.Expression`) is decided by SQLite where it can be, so a
page of a rare method over a million frames reads only what matches; what SQLite cannot
decide (text, regular expressions, the older per-field filters) is checked here on at most
:data:`SCAN` frames a request.
"""

from __future__ import annotations

from typing import Any

from acp_proxy.reconstruct.timing import ms
from acp_proxy.store.reader import Store, StoredFrame
from acp_proxy.text.summary import summary
from acp_proxy.text.timeline import Expression, FrameFilter

__all__ = ["PAGE", "SCAN", "SCAN_SQL", "frame_row", "frames_page"]

PAGE = 200
"""Frames in one page of a timeline."""
SCAN = 5000
"""Frames looked at in Python for one page when filters leave few."""
SCAN_SQL = 200_000
"""Frames one page may pass over when SQLite decides the whole filter (an index walk)."""


def frame_row(f: StoredFrame) -> dict[str, Any]:
    """One line of the timeline."""
    return {
        "seq": f.seq,
        "t_ms": ms(f.frame.t_ns),
        "direction": f.direction.value,
        "kind": f.kind,
        "opcode": f.opcode_text,
        "method": f.method,
        "update": f.update_kind,
        "msg_id": f.msg_id,
        "session": f.session_id,
        "tool_call": f.tool_call_id,
        "terminal": f.terminal_id,
        "summary": summary(f),
        "latency_ms": ms(f.latency_ns),
        "request_seq": f.request_seq,
        "error_code": f.error_code,
        "anomalies": list(f.anomalies),
        "size": f.size,
    }


def _seq_at_time(store: Store, capture_id: int, t_ns: int, last: int) -> int:
    """The first seq at or after ``t_ns`` (frame times grow with seq: a binary search over
    the (capture, seq) index rather than a scan of a large capture)."""
    lo, hi = 0, last + 1
    while lo < hi:
        mid = (lo + hi) // 2
        t = store.conn.execute(
            "SELECT t_ns FROM messages WHERE capture_id = ? AND seq = ?", [capture_id, mid]
        ).fetchone()
        if t is None or t[0] >= t_ns:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _add_answers(store: Store, capture_id: int, rows: list[dict[str, Any]]) -> None:
    """Each request's ``end_ms`` and ``answer_seq``: when and where its answer came (None:
    not yet, or never)."""
    asked = [r["seq"] for r in rows if r["kind"] == "request"]
    answers: dict[int, tuple[int, int]] = {}
    for i in range(0, len(asked), 500):
        part = asked[i : i + 500]
        marks = ", ".join("?" * len(part))
        for req, seq, t in store.conn.execute(
            "SELECT request_seq, seq, t_ns FROM messages WHERE capture_id = ?"
            f" AND request_seq IN ({marks})",
            [capture_id, *part],
        ):
            answers.setdefault(req, (seq, t))
    for r in rows:
        if r["kind"] == "request":
            seq, t = answers.get(r["seq"], (None, None))
            r["answer_seq"], r["end_ms"] = seq, ms(t)


def frames_page(
    store: Store,
    capture_id: int,
    *,
    after: int = -1,
    limit: int = PAGE,
    flt: FrameFilter | None = None,
    expr: Expression | None = None,
    from_ms: float | None = None,
    to_ms: float | None = None,
) -> dict[str, Any]:
    """Up to ``limit`` frames after seq ``after`` that pass the filters. A request passes
    over at most :data:`SCAN` frames (:data:`SCAN_SQL` when SQLite decides the filter):
    ``next`` is the last seq passed over, ``done`` whether that is the last recorded."""
    limit = max(1, min(int(limit), 1000))
    row = store.conn.execute(
        "SELECT MAX(seq) FROM messages WHERE capture_id = ?", [capture_id]
    ).fetchone()
    last = -1 if row[0] is None else int(row[0])
    if from_ms is not None:
        after = max(after, _seq_at_time(store, capture_id, int(from_ms * 1e6), last) - 1)
    to_ns = None if to_ms is None else int(to_ms * 1e6)
    in_python = (flt is not None and flt != FrameFilter()) or (expr is not None and not expr.exact)
    where = None if expr is None else (expr.where, expr.args)
    upto = min(last, after + (SCAN if in_python else SCAN_SQL))
    out: list[dict[str, Any]] = []
    cursor, stopped = after, False
    for f in store.frames(capture_id, after_seq=after, upto_seq=upto, where=where):
        if to_ns is not None and f.frame.t_ns > to_ns:
            cursor, stopped = last, True  # the time range ends here
            break
        cursor = f.seq
        if (flt is None or flt(f)) and (expr is None or expr.exact or expr(f)):
            out.append(frame_row(f))
            if len(out) >= limit:
                stopped = True
                break
    if not stopped:
        cursor = max(cursor, upto)
    _add_answers(store, capture_id, out)
    return {"frames": out, "next": cursor, "done": cursor >= last, "scanned": cursor - after}

"""A capture's service response times: per method, how many requests, answers and errors,
and latency percentiles; errors by code. The inspector's *stats* tab.

Read with grouped queries over the pairing the recorder stored (a response's
``request_seq`` and ``latency_ns``), through the ``(capture_id, request_seq)`` index: the
frames' bytes are never read, so a million-frame capture takes one pass over its answers.
"""

from __future__ import annotations

from typing import Any

from acp_proxy.reconstruct.timing import ms
from acp_proxy.store.reader import Store

__all__ = ["percentile", "stats_json"]

_FLIP = {"c2a": "a2c", "a2c": "c2a"}


def percentile(ordered: list[int], p: float) -> int | None:
    """The nearest-rank ``p`` percentile of ``ordered`` (ascending; None when empty)."""
    if not ordered:
        return None
    rank = max(1, -(-len(ordered) * p // 100))  # ceil, at least the first
    return ordered[int(min(rank, len(ordered))) - 1]


def _answers(store: Store, cid: int) -> dict[tuple[str, str], dict[str, Any]]:
    """Per (method, direction of the request): answers, errors and sorted latencies."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    rows = store.conn.execute(
        "SELECT COALESCE(method, ''), direction, kind, error_code, latency_ns FROM messages"
        " WHERE capture_id = ? AND request_seq IS NOT NULL ORDER BY 1, 2, latency_ns",
        [cid],
    )
    for method, direction, kind, code, latency in rows:
        key = (method, _FLIP.get(direction, direction))
        m = out.setdefault(key, {"answered": 0, "errors": 0, "latencies": []})
        m["answered"] += 1
        m["errors"] += int(kind == "error" or code is not None)
        if latency is not None:
            m["latencies"].append(latency)
    return out


def stats_json(store: Store, cid: int) -> dict[str, Any]:
    """Per method: requests, answered, errors, unanswered, p50/p90/p99/max latency in ms;
    errors by code and method; notifications by method."""
    asked = {
        (m, d): n
        for m, d, n in store.conn.execute(
            "SELECT COALESCE(method, ''), direction, COUNT(*) FROM messages"
            " WHERE capture_id = ? AND kind = 'request' GROUP BY 1, 2",
            [cid],
        )
    }
    answers = _answers(store, cid)
    methods = []
    for key in sorted(set(asked) | set(answers)):
        a = answers.get(key, {"answered": 0, "errors": 0, "latencies": []})
        lat = a["latencies"]
        requests = asked.get(key, 0)
        methods.append(
            {
                "method": key[0],
                "direction": key[1],
                "requests": requests,
                "answered": a["answered"],
                "errors": a["errors"],
                "unanswered": max(0, requests - a["answered"]),
                "p50_ms": ms(percentile(lat, 50)),
                "p90_ms": ms(percentile(lat, 90)),
                "p99_ms": ms(percentile(lat, 99)),
                "max_ms": ms(lat[-1] if lat else None),
            }
        )
    errors = [
        {"code": code, "method": method, "count": n}
        for code, method, n in store.conn.execute(
            "SELECT error_code, COALESCE(method, ''), COUNT(*) FROM messages"
            " WHERE capture_id = ? AND request_seq IS NOT NULL"
            " AND (kind = 'error' OR error_code IS NOT NULL) GROUP BY 1, 2 ORDER BY 3 DESC",
            [cid],
        )
    ]
    notes = [
        {"method": m, "direction": d, "count": n}
        for m, d, n in store.conn.execute(
            "SELECT COALESCE(method, ''), direction, COUNT(*) FROM messages"
            " WHERE capture_id = ? AND kind = 'notification' GROUP BY 1, 2 ORDER BY 3 DESC",
            [cid],
        )
    ]
    return {"methods": methods, "errors": errors, "notifications": notes}

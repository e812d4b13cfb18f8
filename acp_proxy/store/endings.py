"""Reading the events that matter to more than one capture at a time.

What belongs here: :func:`ending_events`, the ``signal`` and ``terminate`` events that say who
ended each capture (:mod:`acp_proxy.events.ending`), for a whole listing in one query.
"""

from __future__ import annotations

from typing import Any

from acp_proxy.store.reader import Store

__all__ = ["ending_events"]


def ending_events(
    store: Store, capture_ids: list[int] | None = None
) -> dict[int, list[dict[str, Any]]]:
    """The events that say who ended each capture (``signal``, ``terminate``), by capture
    (every capture's when ``capture_ids`` is None): one query for a whole listing."""
    sql = "SELECT capture_id, t_ns, kind, detail FROM events WHERE kind IN ('signal', 'terminate')"
    args: list[Any] = []
    if capture_ids is not None:
        if not capture_ids:
            return {}
        sql += f" AND capture_id IN ({','.join('?' * len(capture_ids))})"
        args = list(capture_ids)
    out: dict[int, list[dict[str, Any]]] = {}
    for cid, t_ns, kind, detail in store.conn.execute(sql + " ORDER BY id", args):
        out.setdefault(int(cid), []).append({"t_ns": t_ns, "kind": kind, "detail": detail})
    return out

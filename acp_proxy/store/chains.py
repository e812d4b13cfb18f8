"""Finding the hops of a proxy chain in a recordings database (docs/protocol.md §13.4).

What belongs here: reading which captures belong to one chain — the outer capture, whose
uid is the chain's id, and every capture whose ``chain`` event names that id — and ordering
them: the outer capture first, then the hops in the order the conductor initialized them
(the first ``initialize`` or ``proxy/initialize`` each one received; one that received none
goes last, by start). Event details are read defensively: a capture imported from a file
may hold anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from acp_proxy.errors import UsageError
from acp_proxy.protocol.envelopes import INITIALIZE_METHODS
from acp_proxy.reconstruct.chain import role_of
from acp_proxy.store.reader import Store

__all__ = ["Hop", "ProxyChain", "chain_of"]


@dataclass(slots=True)
class Hop:
    """One capture of a chain."""

    capture: dict[str, Any]
    role: str  # "outer", "proxy", "agent" or "hop"
    parent: str | None  # the uid of the capture whose program started it
    initialized_ns: int | None  # monotonic ns of its first initialize, if it got one

    def to_json(self, index: int) -> dict[str, Any]:
        c = self.capture
        return {"hop": index, "capture": c["id"], "uid": c["uid"], "role": self.role,
                "parent": self.parent, "command": _argv(c.get("agent_command"))}  # fmt: skip


@dataclass(slots=True)
class ProxyChain:
    """A chain's id and its hops, the outer capture first (when it is in this database)."""

    id: str
    hops: list[Hop]

    def index_of(self, capture_id: int) -> int | None:
        return next((i for i, h in enumerate(self.hops) if h.capture["id"] == capture_id), None)


def _detail(text: Any) -> dict[str, Any]:
    try:
        d = orjson.loads(text) if isinstance(text, str | bytes) else None
    except orjson.JSONDecodeError:
        return {}
    return d if isinstance(d, dict) else {}


def _argv(text: Any) -> list[str]:
    try:
        v = orjson.loads(text) if isinstance(text, str | bytes) else None
    except orjson.JSONDecodeError:
        return []
    return [a for a in v if isinstance(a, str)] if isinstance(v, list) else []


def _links(store: Store) -> dict[int, dict[str, Any]]:
    """Every capture's ``chain`` event detail, by capture id."""
    rows = store.conn.execute("SELECT capture_id, detail FROM events WHERE kind = 'chain'")
    out: dict[int, dict[str, Any]] = {}
    for capture_id, detail in rows:
        d = _detail(detail)
        if isinstance(d.get("chain"), str):
            out.setdefault(capture_id, d)
    return out


def _initialized(store: Store, capture: dict[str, Any]) -> tuple[int | None, str | None]:
    marks = ",".join("?" * len(INITIALIZE_METHODS))
    row = store.conn.execute(
        "SELECT t_ns, method FROM messages WHERE capture_id = ? AND direction = 'c2a' "
        f"AND kind = 'request' AND method IN ({marks}) ORDER BY seq LIMIT 1",
        [capture["id"], *sorted(INITIALIZE_METHODS)],
    ).fetchone()
    if row is None:
        return None, None
    return capture["started_ns"] + row[0], row[1]


def chain_of(store: Store, capture: dict[str, Any]) -> ProxyChain | None:
    """The chain ``capture`` belongs to (as its outer capture or as a hop); None when it
    belongs to none."""
    links = _links(store)
    own = links.get(capture["id"])
    chain_id = own["chain"] if own is not None else capture["uid"]
    members = [cid for cid, d in links.items() if d["chain"] == chain_id]
    if own is None and not members:
        return None
    hops: list[Hop] = []
    try:
        outer = store.capture(chain_id)
    except UsageError:  # recorded in another database, or removed
        pass
    else:
        hops.append(Hop(outer, "outer", None, _initialized(store, outer)[0]))
    inner: list[Hop] = []
    for cid in members:
        c = store.capture(cid)
        at, method = _initialized(store, c)
        parent = links[cid].get("parent")
        inner.append(Hop(c, role_of(method), parent if isinstance(parent, str) else None, at))
    inner.sort(key=lambda h: (h.initialized_ns is None, h.initialized_ns or 0,
                              h.capture["started_ns"], h.capture["id"]))  # fmt: skip
    return ProxyChain(chain_id, hops + inner)

"""The hops of one proxy chain as one sequence (pure, no I/O; docs/protocol.md §13.4).

What belongs here: what a hop is from its own frames — a proxy (the conductor initialized
it with ``proxy/initialize`` or an older name), the final agent (``initialize``) — and the
merge of every hop's items into one sequence in the time they happened. Times are the
monotonic clock's, which every process of one machine shares: a capture's ``started_ns``
plus an item's ``t_ns``. Finding the hops in a database is
:mod:`acp_proxy.store.chains`'s.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Sequence
from typing import TypeVar

from acp_proxy.protocol.envelopes import PROXY_INITIALIZE

__all__ = ["merged", "role_of"]

T = TypeVar("T")


def role_of(initialized_with: str | None) -> str:
    """What a hop is, by the method its conductor initialized it with."""
    if initialized_with in PROXY_INITIALIZE:
        return "proxy"
    if initialized_with == "initialize":
        return "agent"
    return "hop"


def merged(hops: Sequence[tuple[int, Iterable[tuple[int, T]]]]) -> Iterator[tuple[int, int, T]]:
    """``(at_ns, hop, item)`` in time order, from each hop's ``(started_ns, [(t_ns, item)])``;
    at the same instant, the hop listed first comes first (the outer capture)."""
    streams = [_placed(hop, started, items) for hop, (started, items) in enumerate(hops)]
    return heapq.merge(*streams, key=lambda x: (x[0], x[1]))


def _placed(hop: int, started: int, items: Iterable[tuple[int, T]]) -> Iterator[tuple[int, int, T]]:
    for t, item in items:
        yield started + t, hop, item

"""When each recorded agent message may be played (pure, sans-I/O; used by ``replay agent``).

What belongs here: :class:`Schedule` — for each recorded agent message, the recorded client
messages it waits for, and which messages have become ready as the live client's messages
are matched. Lenient: a response waits for its own request, and every message for the client
message nearest before it (a request of another session, or another request before a
response, is skipped over), so independent requests may come in another order; a child
session (docs/protocol.md §13.1) counts as its parent's, so a subagent's messages wait for
the parent's prompt. Strict:
every agent message waits for all client messages recorded before it, and goes in recorded
order. Which live message matches which recorded one is ``replay.agent``'s.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping

from acp_proxy.protocol.frames import Direction
from acp_proxy.protocol.jsonrpc import Kind
from acp_proxy.replay.core.mapper import children_of
from acp_proxy.replay.core.match import ReplayMessage, session_of

__all__ = ["Schedule"]

C2A, A2C = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT


class Schedule:
    """The recorded agent messages, released as what they wait for is received."""

    def __init__(
        self, messages: list[ReplayMessage], by_seq: Mapping[int, ReplayMessage], *, strict: bool
    ) -> None:
        self.by_seq = by_seq
        self.strict = strict
        self.agent = [m for m in messages if m.direction is A2C]
        self.deps = _dependencies(messages, by_seq, strict)
        # indexes, so each client message costs what it touches, not the whole recording
        self._missing = {seq: len(d) for seq, d in self.deps.items()}
        self._dependents: dict[int, list[int]] = {}
        for seq, d in self.deps.items():
            for c in d:
                self._dependents.setdefault(c, []).append(seq)
        self._ready_heap = [m.seq for m in self.agent if not self.deps[m.seq]]
        self._next_agent = 0  # strict: the first agent message not released yet

    def received(self, seq: int) -> None:
        """The recorded client message ``seq`` has been matched."""
        for waiting in self._dependents.get(seq, ()):
            self._missing[waiting] -= 1
            if self._missing[waiting] == 0:
                heapq.heappush(self._ready_heap, waiting)

    def ready(self) -> list[ReplayMessage]:
        """What may go now: in lenient mode every agent message whose inputs all came, in
        recorded order (one waiting on its own input holds no one else); in strict mode the
        recorded order itself, up to the first message still waiting."""
        out: list[ReplayMessage] = []
        if self.strict:
            while self._next_agent < len(self.agent):
                m = self.agent[self._next_agent]
                if self._missing[m.seq]:
                    break
                out.append(m)
                self._next_agent += 1
            return out
        while self._ready_heap:
            out.append(self.by_seq[heapq.heappop(self._ready_heap)])
        return out


def _dependencies(
    messages: list[ReplayMessage], by_seq: Mapping[int, ReplayMessage], strict: bool
) -> dict[int, frozenset[int]]:
    """For each recorded agent message, the recorded client messages it waits for."""
    deps: dict[int, frozenset[int]] = {}
    before: list[ReplayMessage] = []
    parents = {c: p for p, kids in children_of(m.value for m in messages).items() for c in kids}

    def root(sid: str | None) -> str | None:
        for _ in range(len(parents) + 1):
            if sid is None or sid not in parents:
                break
            sid = parents[sid]
        return sid

    for m in messages:
        if m.direction is C2A:
            if m.kind != Kind.INVALID:
                before.append(m)
            continue
        if strict:
            deps[m.seq] = frozenset(c.seq for c in before)
            continue
        need: set[int] = set()
        own = m.partner if m.is_response else None
        if own is not None:
            need.add(own)
        sid = root(session_of(m, by_seq))
        for c in reversed(before):
            if c.kind == Kind.REQUEST and c.seq != own:
                if m.is_response:
                    continue  # another request: independent of this answer
                other = root(session_of(c))
                if sid is not None and other is not None and other != sid:
                    continue  # a request for another session
            need.add(c.seq)
            break
        deps[m.seq] = frozenset(need)
    return deps

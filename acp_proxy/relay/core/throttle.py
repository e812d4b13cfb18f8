"""How often a listener tells stderr that it refused someone.

What belongs here: :class:`Refusals`, the rule for the lines a listener writes when it
answers a client itself (a refusal, a timed-out body, an upstream that failed). One such
line per client is right when they are rare; a process that floods the listener with
requests it must refuse would otherwise write a line per request, and a stderr that nobody
drains fills its pipe and stops the listener on its next write.

The rule: of the lines of one kind (one HTTP status), the first of each interval is
written; the others are counted, and their count is told, in one line, before the next line
of that kind that is written or when the listener stops. Every refusal is still recorded
in the capture it belongs to; only stderr is spared. The clock is given, so the rule is
tested without waiting.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["REFUSAL_INTERVAL_S", "Refusals"]

REFUSAL_INTERVAL_S = 10.0
"""At most one line of each kind per this many seconds (as for running out of
descriptors)."""


@dataclass(slots=True)
class _Kind:
    since: float  # when the line of this interval was written
    unsaid: int = 0  # lines of this kind not written since
    last: float = 0.0  # when the last of them came


@dataclass(slots=True)
class Refusals:
    """Which refusal lines to write: :meth:`say` for each, :meth:`rest` at the end."""

    interval_s: float = REFUSAL_INTERVAL_S
    _kinds: dict[int, _Kind] = field(default_factory=dict)

    def say(self, status: int, line: str, now: float) -> list[str]:
        """The lines to write for a refusal answered ``status`` at ``now``: ``line`` (after
        the count of those not written before it), or nothing within an interval."""
        kind = self._kinds.get(status)
        if kind is not None and now - kind.since < self.interval_s:
            kind.unsaid += 1
            kind.last = now
            return []
        out = [] if kind is None else self._count(status, kind)
        self._kinds[status] = _Kind(since=now)
        return [*out, line]

    def rest(self, now: float) -> list[str]:
        """The counts not told yet (the listener is stopping)."""
        out: list[str] = []
        for status, kind in self._kinds.items():
            out += self._count(status, kind)
            kind.unsaid = 0
        return out

    def _count(self, status: int, kind: _Kind) -> list[str]:
        if not kind.unsaid:
            return []
        within = max(kind.last - kind.since, 0.0)
        return [
            f"{kind.unsaid} more answered HTTP {status} in {within:.1f} s "
            f"(a line per status per {self.interval_s:g} s)"
        ]

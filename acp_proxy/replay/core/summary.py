"""What a comparison of two runs speaks in (pure, sans-I/O).

What belongs here: the summary of a run (:class:`RunSummary`: its setup and its turns,
each a :class:`TurnSummary` with its events, :class:`ToolSummary` values, stop reason and errors,
and with ``detail`` a :class:`Detail` of the facets ``acp-proxy diff`` adds), one
difference between two runs (:class:`Divergence`) and how they are written in a line.
Building summaries is :mod:`.compare`'s and :mod:`.detail`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acp_proxy.replay.core.canonical import dump

__all__ = ["Detail", "Divergence", "RunSummary", "ToolSummary", "TurnSummary", "error_text", "mean"]


@dataclass(slots=True)
class ToolSummary:
    title: str | None = None
    kind: str | None = None
    statuses: list[str] = field(default_factory=list)
    turn: int = 0
    locations: list[str] = field(default_factory=list)  # detail only
    content: Any = None  # detail only: the last content seen

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"title": self.title, "kind": self.kind, "statuses": self.statuses}
        if self.locations or self.content is not None:
            out.update(locations=self.locations, content=self.content)
        return out


@dataclass(slots=True)
class TurnSummary:
    label: str
    events: list[str] = field(default_factory=list)
    tool_calls: list[ToolSummary] = field(default_factory=list)
    stop_reason: str | None = None
    errors: list[str] = field(default_factory=list)
    detail: Detail | None = None
    retries: list[str] = field(default_factory=list)  # the idempotencyKey of each retry

    def to_json(self) -> dict[str, Any]:
        out = {
            "label": self.label,
            "events": self.events,
            "tool_calls": [t.to_json() for t in self.tool_calls],
            "stop_reason": self.stop_reason,
            "errors": self.errors,
        }
        if self.retries:
            out["retries"] = self.retries
        if self.detail is not None:
            out.update(self.detail.to_json())
        return out

    @property
    def retried(self) -> str | None:
        """How its prompt was retried, for a note (None: it was not)."""
        if not self.retries:
            return None
        keys = ", ".join(sorted(set(self.retries)))
        n = len(self.retries)
        return f"{self.label}: its prompt was sent again {n}× (idempotencyKey {keys})"


@dataclass(slots=True)
class RunSummary:
    setup: TurnSummary = field(default_factory=lambda: TurnSummary("setup"))
    turns: list[TurnSummary] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    announced: set[str] = field(default_factory=set)  # ambient kinds, in no particular place
    announced_late: set[str] = field(default_factory=set)  # after the client's end: a race
    eof_ns: int | None = None  # when the client closed the agent's stdin

    def to_json(self) -> dict[str, Any]:
        return {
            "setup": self.setup.to_json(),
            "turns": [t.to_json() for t in self.turns],
            "files": self.files,
            "announced": sorted(self.announced),
        }

    def retry_notes(self) -> list[str]:
        """The turns whose prompt was retried with the same key (one turn each, not a
        difference: a client that retries is not an agent that changed)."""
        return [t.retried for t in self.turns if t.retried is not None]


@dataclass(frozen=True, slots=True)
class Divergence:
    where: str
    what: str
    recorded: Any
    replayed: Any

    def __str__(self) -> str:
        return self.text("recorded", "replayed")

    def text(self, a: str, b: str) -> str:
        was, now = _show(self.recorded), _show(self.replayed)
        return f"{self.where} · {self.what}: {a} {was}; {b} {now}"

    def to_json(self) -> dict[str, Any]:
        return {
            "where": self.where,
            "what": self.what,
            "recorded": self.recorded,
            "replayed": self.replayed,
        }


def _show(v: Any) -> str:
    if v is None:
        return "nothing"
    if isinstance(v, list):
        return " → ".join(map(str, v)) if v else "nothing"
    if isinstance(v, str) and "\n" not in v:
        return v if len(v) <= 80 else v[:79] + "…"
    text = dump(v).decode("utf-8", "replace")
    return text if len(text) <= 80 else text[:79] + "…"


def error_text(v: dict[str, Any]) -> str:
    e = v.get("error")
    text = f"{e.get('code')} {e.get('message')}" if isinstance(e, dict) else str(e)
    return text if len(text) <= 72 else text[:71] + "…"


@dataclass(slots=True)
class Detail:
    """What :func:`~acp_proxy.replay.core.compare.summarise_run` gathers with ``detail=True``, per
    turn (and setup)."""

    prompt: str = ""
    answer: str = ""
    thought: str = ""
    permissions: list[dict[str, Any]] = field(default_factory=list)
    terminals: list[dict[str, Any]] = field(default_factory=list)
    initialize: dict[str, Any] = field(default_factory=dict)
    latency_ms: dict[str, list[float]] = field(default_factory=dict)  # method -> latencies
    first_output_ms: float | None = None
    # the chunks of the answer and the thought while they are gathered: joined once at the
    # end (adding each to a string copies all before it: a long answer took minutes)
    answer_parts: list[str] = field(default_factory=list, repr=False, compare=False)
    thought_parts: list[str] = field(default_factory=list, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "answer": self.answer,
            "thought": self.thought,
            "permissions": self.permissions,
            "terminals": self.terminals,
            "initialize": self.initialize,
            "timing": {
                "latency_ms": {k: mean(v) for k, v in self.latency_ms.items()},
                "first_output_ms": self.first_output_ms,
            },
        }


def mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 3) if values else 0.0

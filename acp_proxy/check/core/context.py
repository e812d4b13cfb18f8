"""What the checks of one capture share (pure, no I/O).

What belongs here: :class:`Context` — the options of a run (version forced or not, unstable
schemas, rules ignored, :class:`Thresholds`), what ``initialize`` settled (the version, both
sides' capabilities, whether it completed), the sessions known so far, the frame being
checked, and :meth:`Context.add`, the one place a finding is made — and the records the rule
modules keep: :class:`Request` (a call still to be answered) and :class:`Session`. Also the
readers every rule applies to hostile values (:func:`as_dict`, :func:`marker`) and who is at
fault for a frame (:func:`sender`, :func:`receiver`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from acp_proxy.check.core.findings import Finding
from acp_proxy.check.core.rules import RULES
from acp_proxy.protocol.frames import Direction

__all__ = [
    "SEC",
    "Context",
    "Request",
    "Session",
    "Thresholds",
    "as_dict",
    "marker",
    "receiver",
    "sender",
]

SEC = 1_000_000_000
_EXCERPT = 160
_SIDE = {Direction.CLIENT_TO_AGENT: "client", Direction.AGENT_TO_CLIENT: "agent"}
_OTHER = {Direction.CLIENT_TO_AGENT: "agent", Direction.AGENT_TO_CLIENT: "client"}


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Timing warnings, in seconds."""

    slow_response: float = 60.0
    slow_cancel: float = 10.0


@dataclass(slots=True)
class Request:
    """A request or notification as the rules remember it."""

    seq: int
    t_ns: int
    method: str | None
    params: dict[str, Any]
    direction: Direction


@dataclass(slots=True)
class Session:
    """What the rules know of one ACP session."""

    prompt: Request | None = None  # v1: the prompt in flight
    cancel: Request | None = None  # the session/cancel of the turn in flight
    turns: int = 0
    tool_calls: set[str] = field(default_factory=set)
    released: dict[str, int] = field(default_factory=dict)  # v1 terminalId -> release seq
    turn_open: Request | None = None  # v2: the accepted prompt whose turn has not ended
    idle_early: bool = False  # v2: the turn went idle before its prompt was acknowledged
    cancellable_tools: set[str] = field(default_factory=set)
    cancellable_terminals: set[str] = field(default_factory=set)
    seen_tools: set[str] = field(default_factory=set)
    seen_terminals: set[str] = field(default_factory=set)
    replay: Request | None = None  # a load or resume replaying history (docs/protocol.md §13.2)
    replay_parent: str | None = None  # a child announced during its parent's replay
    replay_updates: int = 0
    markers: int = 0
    keys: dict[str, Any] = field(default_factory=dict)  # idempotencyKey -> first messageId


def sender(direction: Direction) -> str:
    return _SIDE[direction]


def receiver(direction: Direction) -> str:
    return _OTHER[direction]


def as_dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def marker(v: Any) -> bool:
    """A v2 support marker (an object) or a v1 boolean flag."""
    return v is True or isinstance(v, dict)


def _excerpt(raw: bytes) -> str:
    text = raw[: _EXCERPT * 4].decode("utf-8", "backslashreplace")
    return text if len(text) <= _EXCERPT else text[:_EXCERPT] + "…"


class Context:
    """The state one capture's checks share, and the findings of the frame being checked.
    ``version`` forces the protocol version (else ``initialize`` decides, v1 when there is
    none); ``unstable`` validates against the unstable schemas; ``ignore`` drops rule ids."""

    def __init__(
        self,
        *,
        version: int | None,
        unstable: bool,
        ignore: Iterable[str],
        thresholds: Thresholds | None,
    ) -> None:
        self.forced = version
        self.version: int = version or 1
        self.unstable = unstable
        self.ignore = frozenset(ignore)
        self.thresholds = thresholds or Thresholds()
        self.init_sent = False
        self.init_done = False
        self.no_schema = False  # the agent answered a version we have no schema of
        self.client_caps: dict[str, Any] = {}
        self.agent_caps: dict[str, Any] = {}
        self.sessions: dict[str, Session] = {}
        self.children: dict[str, str] = {}  # child session -> its parent (subagents)
        self.child_caps: dict[str, Any] = {}  # child session -> its advertised capabilities
        self.unannounced: dict[str, int] = {}  # session id -> first frame naming it unknown
        self.out: list[Finding] = []
        self.seq = 0
        self.raw = b""

    def at(self, seq: int, raw: bytes = b"") -> None:
        """Findings from now on are about frame ``seq`` (-1: the capture as a whole)."""
        self.seq, self.raw = seq, raw

    def add(self, rule_id: str, side: str, message: str, related: Sequence[int] = ()) -> None:
        """A finding of ``rule_id`` on the current frame, unless ignored or not of this
        protocol version."""
        if rule_id in self.ignore:
            return
        r = RULES[rule_id]
        if self.version not in r.versions:
            return
        seq = None if self.seq < 0 else self.seq
        self.out.append(
            Finding(
                rule_id, r.severity, side, seq, message, _excerpt(self.raw), tuple(related), r.spec
            )
        )

    def session(self, sid: Any) -> Session | None:
        return self.sessions.get(sid) if isinstance(sid, str) else None

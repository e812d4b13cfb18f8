"""Sessions, turns and permission prompts (pure, no I/O).

What belongs here: the records for what surrounds tool calls —

* :class:`SessionState`: cwd, mode and config option changes (v1 ``current_mode_update``,
  ``session/set_mode``; ``config_option_update``, ``session/set_config_option``), the plan
  (v1 ``plan`` replaces the whole plan; v2 ``plan_update`` per ``planId``, ``plan_removed``),
  usage (``usage_update``), title, v2 session state (``state_update``), docs/protocol.md §5;
* :class:`Turn`: a prompt and how it ended (v1: the ``session/prompt`` response; v2: the
  next ``state_update`` ``idle``, the response being only an acknowledgement, §6.2), with
  time to first agent output, cancellation (§7.3) and what the agent said;
* :class:`Permission`: a ``session/request_permission`` (v1 ``toolCall``; v2 ``title``,
  ``subject``), its options (custom ``_`` kinds kept), the outcome and how long the user
  took (§6.4). An unknown outcome is never counted as approval.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from acp_proxy.reconstruct.kinds import role_of

__all__ = ["Change", "Permission", "Retry", "SessionState", "Turn", "intervals_ns"]


_CHUNK, _UPSERT = "chunk", "upsert"
"""The changes a turn holds behind text not read yet (:attr:`Turn.pending`)."""


def _hashable(message_id: Any) -> Any:
    """A message id as a key: a peer may send a list or an object (docs/design.md principle
    7); those are told apart by their JSON text."""
    if isinstance(message_id, list | dict):
        return ("json", json.dumps(message_id, sort_keys=True, default=str))
    return message_id


@dataclass(slots=True)
class Change:
    """A value a session took at some point (a mode, the config, a plan, usage, state)."""

    seq: int
    t_ns: int
    value: Any
    source: str = "agent"  # agent (a session/update) or client (a request the agent accepted)


@dataclass(slots=True)
class SessionState:
    session_id: str
    seq: int
    t_ns: int
    cwd: str | None = None
    mode: str | None = None
    modes: Any = None
    config_options: Any = None
    usage: Any = None
    title: Any = None
    state: str | None = None
    plan: list[Any] | None = None
    plans: dict[str, Any] = field(default_factory=dict)
    commands: Any = None
    mode_history: list[Change] = field(default_factory=list)
    config_history: list[Change] = field(default_factory=list)
    plan_history: list[Change] = field(default_factory=list)
    usage_history: list[Change] = field(default_factory=list)
    state_history: list[Change] = field(default_factory=list)
    notices: list[Change] = field(default_factory=list)
    unknown_updates: dict[str, int] = field(default_factory=dict)
    history: int = 0  # updates that replayed history (docs/protocol.md §13.2)

    def set_mode(self, mode: Any, seq: int, t_ns: int, source: str) -> None:
        if isinstance(mode, str):
            self.mode = mode
            self.mode_history.append(Change(seq, t_ns, mode, source))

    def set_config(self, options: Any, seq: int, t_ns: int, source: str) -> None:
        if isinstance(options, list):
            self.config_options = options
            self.config_history.append(Change(seq, t_ns, options, source))

    def set_plan_v1(self, entries: Any, seq: int, t_ns: int) -> None:
        """v1 ``plan``: each update replaces the whole plan (§5.1)."""
        self.plan = list(entries) if isinstance(entries, list) else []
        self.plan_history.append(Change(seq, t_ns, {"entries": self.plan}))

    def set_plan_v2(self, plan: Any, seq: int, t_ns: int) -> None:
        """v2 ``plan_update``: the plan with this ``planId`` is replaced (§5.2)."""
        if isinstance(plan, dict):
            pid = plan.get("planId")
            self.plans[str(pid)] = plan
            self.plan_history.append(Change(seq, t_ns, plan))

    def remove_plan(self, plan_id: Any, seq: int, t_ns: int) -> None:
        self.plans.pop(str(plan_id), None)
        self.plan_history.append(Change(seq, t_ns, {"removed": plan_id}))


@dataclass(slots=True)
class Permission:
    session_id: str | None
    request_id: str | None
    seq: int
    t_ns: int
    title: str | None
    tool_call_id: str | None
    options: list[Any]
    description: Any = None
    subject: Any = None
    tool_call: Any = None
    meta: Any = None
    answered_seq: int | None = None
    answered_t_ns: int | None = None
    outcome: str | None = None
    option_id: str | None = None
    option_kind: str | None = None
    error: Any = None
    cancel_requested_seq: int | None = None

    @property
    def approved(self) -> bool | None:
        """``True`` only for a selected, offered option whose kind is an allow kind."""
        if self.answered_seq is None:
            return None
        return self.outcome == "selected" and (self.option_kind or "").startswith("allow_")

    @property
    def wait_ns(self) -> int | None:
        return None if self.answered_t_ns is None else self.answered_t_ns - self.t_ns

    def answer(self, result: Any, error: Any, seq: int, t_ns: int) -> None:
        """The client's answer: ``{outcome:{outcome, optionId?}}`` or an error (§6.4, §7.3)."""
        self.answered_seq, self.answered_t_ns = seq, t_ns
        if error is not None:
            self.error = error
            return
        outcome = result.get("outcome") if isinstance(result, dict) else None
        if isinstance(outcome, dict):
            o = outcome.get("outcome")
            self.outcome = o if isinstance(o, str) else None
            oid = outcome.get("optionId")
            self.option_id = oid if isinstance(oid, str) else None
        for opt in self.options:
            if isinstance(opt, dict) and opt.get("optionId") == self.option_id:
                kind = opt.get("kind")
                self.option_kind = kind if isinstance(kind, str) else None


@dataclass(slots=True)
class Retry:
    """A ``session/prompt`` that resent an earlier one's ``idempotencyKey`` (§13.3)."""

    seq: int
    t_ns: int
    request_id: str | None
    response_seq: int | None = None
    message_id: Any = None
    error: Any = None


@dataclass(slots=True)
class Turn:
    session_id: str | None
    index: int
    request_id: str | None
    seq: int
    t_ns: int
    prompt: Any
    ended_seq: int | None = None
    ended_t_ns: int | None = None
    stop_reason: str | None = None
    error: Any = None
    message_id: Any = None
    acked_seq: int | None = None
    cancel_seq: int | None = None
    cancel_t_ns: int | None = None
    first_output_seq: int | None = None
    first_output_t_ns: int | None = None
    updates: int = 0
    messages: dict[tuple[str, Any], list[str]] = field(default_factory=dict)
    tool_call_ids: list[str] = field(default_factory=list)
    permissions: list[Permission] = field(default_factory=list)
    idempotency_key: Any = None
    retries: list[Retry] = field(default_factory=list)
    pending: list[Any] = field(default_factory=list)
    """What changes :attr:`messages` and is not read yet, in order (:meth:`read_text`): the
    ``seq`` of a message chunk whose text was left in its frame (a ``range`` of them, one
    after the other), and each chunk or upsert that came after one (``(_CHUNK, role, id,
    content)``, ``(_UPSERT, role, id, update)``)."""

    @property
    def open(self) -> bool:
        return self.ended_seq is None

    def end(self, seq: int, t_ns: int, stop_reason: Any, error: Any = None) -> None:
        self.ended_seq, self.ended_t_ns = seq, t_ns
        self.stop_reason = stop_reason if isinstance(stop_reason, str) else None
        self.error = error

    def chunk(self, role: str, message_id: Any, content: Any) -> None:
        """A message or thought chunk: its text is appended (§5.1, §5.2)."""
        if self.pending:  # after text not read yet: in its turn
            self.pending.append((_CHUNK, role, message_id, content))
            return
        if isinstance(content, dict) and content.get("type") == "text":
            if message_id is not None and message_id.__class__ is not str:  # most are
                message_id = _hashable(message_id)
            self.messages.setdefault((role, message_id), []).append(str(content.get("text", "")))

    def upsert(self, role: str, message_id: Any, u: dict[str, Any]) -> None:
        """A v2 ``agent_message``/``agent_thought``: omitted content = unchanged, ``null`` or
        ``[]`` = cleared, an array = replaced (§5.2)."""
        if self.pending:
            self.pending.append((_UPSERT, role, message_id, u))
            return
        message_id = _hashable(message_id)
        if "content" not in u:
            self.messages.setdefault((role, message_id), [])
            return
        blocks = u["content"] if isinstance(u["content"], list) else []
        self.messages[(role, message_id)] = [
            str(b.get("text", ""))
            for b in blocks
            if isinstance(b, dict) and b.get("type") == "text"
        ]

    def read_text(self, updates: Mapping[int, dict[str, Any]]) -> None:
        """Fold what :attr:`pending` holds, in order: each chunk left in its frame from
        ``updates`` (frame ``seq`` → its ``params.update``) as :meth:`chunk` would have."""
        pending, self.pending = self.pending, []
        for op in pending:
            if isinstance(op, int | range):
                for seq in range(op, op + 1) if isinstance(op, int) else op:
                    u = updates[seq]
                    role = role_of(u.get("sessionUpdate"))
                    self.chunk(role, u.get("messageId"), u.get("content"))
            elif op[0] == _CHUNK:
                self.chunk(*op[1:])
            else:
                self.upsert(*op[1:])

    def pending_seqs(self) -> set[int]:
        """The frames :attr:`pending` left its text in."""
        seqs: set[int] = set()
        for op in self.pending:
            if isinstance(op, int):
                seqs.add(op)
            elif isinstance(op, range):
                seqs.update(op)
        return seqs

    def text(self, role: str) -> str:
        """What the agent said (``agent``) or thought (``thought``), messages in order."""
        if self.pending:
            raise LookupError(f"turn {self.index}: its text is not read yet (read_text)")
        return "".join("".join(parts) for (r, _), parts in self.messages.items() if r == role)

    @property
    def prompt_text(self) -> str:
        parts = []
        for block in self.prompt if isinstance(self.prompt, list) else []:
            if isinstance(block, dict):
                if block.get("type") == "text":
                    parts.append(str(block.get("text", "")))
                else:
                    parts.append(f"<{block.get('type')}>")
        return " ".join(parts)


def intervals_ns(spans: list[tuple[int, int]]) -> int:
    """Total length of the union of ``[start, end)`` spans (tool time without overlaps)."""
    total = 0
    last_end: int | None = None
    for start, end in sorted(spans):
        if last_end is None or start > last_end:
            total += end - start
            last_end = end
        elif end > last_end:
            total += end - last_end
            last_end = end
    return total

"""Standing in for the client from a recording (pure state machine, sans-I/O).

What belongs here: deciding when to send each recorded client message to a live agent, and
how to answer the live agent's requests. :class:`ClientStandIn` is fed the agent's frames
and asked whether the next step may go; the I/O (the agent process, recording the new run,
time-outs) is in ``replay/run.py`` and ``replay/serve.py``.

How the recorded client side is played:

- The client's requests and notifications are *steps*, sent in recorded order. Each waits
  for what it followed in the recording: the answer to a request (the live answer to the
  same request), or else the N-th agent message of the same shape since the previous step
  ("the 3rd ``agent_message_chunk`` after the prompt": a ``session/cancel`` goes out at the
  same point of the turn even when the text differs). When the live agent finishes the
  request that was open at that point without getting there, the wait is given up.
- Session ids the new run's agent hands out replace the recorded ones in everything sent
  (docs/protocol.md §12.6); a recorded workspace path may be replaced by another.
- The live agent's requests (permission, fs, terminal, docs/protocol.md §4.1) are matched with
  the recorded ones by method and canonical params (tool call ids are volatile: random per
  run; ``ignore`` paths under ``params`` are left out too) and answered with the recorded
  answer, with the live id. A request the recording has no answer for gets a JSON-RPC
  error (-32603) saying so; an identical request asked more often than recorded gets the
  last recorded answer again (agents poll).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from acp_proxy.protocol.frames import Direction
from acp_proxy.protocol.jsonrpc import Kind, classify
from acp_proxy.replay.core.canonical import canonical, dump, dump_with_id, key_of, summarise
from acp_proxy.replay.core.mapper import Children, Mapper
from acp_proxy.replay.core.match import (
    KeyIndex,
    Problems,
    ReplayMessage,
    closest_request,
    live_message,
    shape,
)

__all__ = ["ClientStandIn", "Step", "Wait"]

C2A, A2C = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT
_WILDCARDS = frozenset({"toolCallId", "messageId"})


@dataclass(frozen=True, slots=True)
class Wait:
    """What a step waits for: the answer to ``request`` or ``ordinal`` messages of ``shape``;
    ``open`` are the recorded requests still unanswered at that point."""

    recorded: ReplayMessage
    request: int | None = None
    shape: tuple[str, ...] = ()
    ordinal: int = 0
    open: frozenset[int] = frozenset()

    def describe(self) -> str:
        if self.request is not None:
            return f"the answer to recorded #{self.request}"
        what = self.shape[3:] if self.shape[2:3] == ("session/update",) else self.shape[2:]
        return f"the {_nth(self.ordinal)} {' '.join(what)} (recorded #{self.recorded.seq})"


@dataclass(frozen=True, slots=True)
class Step:
    """A recorded client request or notification and what it waits for."""

    index: int
    message: ReplayMessage
    wait: Wait | None


def _nth(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


class ClientStandIn:
    """Feed the live agent's frames to :meth:`receive`; send steps when :meth:`ready`."""

    def __init__(
        self,
        messages: Iterable[ReplayMessage],
        *,
        cwd: tuple[str, str] | None = None,
        ignore: Iterable[tuple[str, ...]] = (),
        client_eof_ns: int | None = None,
    ) -> None:
        self.messages = list(messages)
        self.by_seq = {m.seq: m for m in self.messages}
        self.mapper = Mapper([cwd] if cwd else ())
        self.children = Children(m.value for m in self.messages if m.direction is A2C)
        self.problems = Problems()
        self.ignore = [p[1:] for p in ignore if p[:1] in (("params",), ("*",))]
        self.steps = _steps(self.messages)
        self.tail = _tail(self.messages, client_eof_ns)
        self._pending: dict[str, int] = {}  # token of a request we sent → its recorded seq
        self._answered: set[int] = set()
        self._counts: dict[tuple[str, ...], int] = {}
        self._used: set[int] = set()  # recorded agent requests already answered
        self._asked = [m for m in self.messages if m.direction is A2C and m.kind == Kind.REQUEST]
        self._index = KeyIndex(self._asked, lambda m: self._key(m.method, m.params))

    @property
    def outstanding(self) -> int:
        """Requests we sent that the agent has not answered yet."""
        return len(self._pending)

    def ready(self, step: Step) -> bool | None:
        """True: send it now; False: keep waiting; None: what it waits for cannot come."""
        w = step.wait
        if w is None:
            return True
        if w.request is not None:
            if w.request in self._answered:
                return True
            return None if self._gone(w.request) else False
        if self._counts.get(w.shape, 0) >= w.ordinal:
            return True
        return None if any(s in self._answered for s in w.open) else False

    def tail_ready(self) -> bool | None:
        """Whether the agent has said what the recording has it say after the client's
        last message and before the client closed its stdin (:func:`_tail`); None when it
        cannot come any more."""
        w = self.tail
        if w is None:
            return True
        if w.request is not None:
            return True if w.request in self._answered else (None if self._gone(w.request)
                                                             else False)  # fmt: skip
        return self._counts.get(w.shape, 0) >= w.ordinal

    def _gone(self, seq: int) -> bool:
        """Whether a recorded request was never sent (so its answer cannot come)."""
        m = self.by_seq[seq]
        return m.token not in self._pending and seq not in self._answered

    def give_up(self, step: Step, why: str) -> None:
        assert step.wait is not None
        self.problems.add(
            "wait_given_up",
            f"before sending recorded {step.message.label()}: {why} waiting for "
            f"{step.wait.describe()}; sent it anyway",
            step.message.seq,
        )

    def silent(self, step: Step, timeout: float) -> None:
        """The agent wrote nothing at all while ``step`` waited ``timeout`` seconds."""
        w = step.wait
        assert w is not None
        what = (
            f"the answer to {self.by_seq[w.request].label()}"
            if w.request is not None
            else (w.describe())
        )
        self.problems.add(
            "agent_silent",
            f"the agent sent nothing in {timeout:g} s (waited for {what}); "
            "the replay stopped there",
            step.message.seq,
        )

    def send(self, step: Step) -> bytes:
        """The bytes of a step, in the live run's terms; noted as sent."""
        m = step.message
        self._counts.clear()
        if m.kind == Kind.REQUEST and m.token is not None:
            self._pending[m.token] = m.seq
        if not isinstance(m.value, dict):
            return m.raw
        live = self.mapper.to_live(m.value)
        return m.raw if live == m.value else dump(live)

    def receive(self, raw: bytes) -> list[bytes]:
        """A frame from the live agent; returns what to send back (answers to its requests)."""
        info = classify(raw)
        value = info.value
        if info.kind == Kind.BATCH:
            self.problems.add(
                "unexpected_message", "the agent sent a batch; replay does not answer those"
            )
            return []
        if info.kind == Kind.INVALID or not isinstance(value, dict):
            return []
        live = live_message(raw, info, A2C)
        if live.is_response:
            rec_seq = self._pending.pop(live.token or "", None)
            if rec_seq is not None:
                self._answered.add(rec_seq)
                partner = self.by_seq[rec_seq].partner
                if partner is not None:
                    self.mapper.learn(live.outcome, self.by_seq[partner].outcome)
            return []
        self.children.learn(self.mapper, value)  # a fresh child: the recorded one in its place
        key = shape(live)
        self._counts[key] = self._counts.get(key, 0) + 1
        if live.kind == Kind.REQUEST:
            return [self._answer(live)]
        return []

    def finish(self, *, unsent: Iterable[Step] = (), why: str = "the agent went away") -> None:
        left = list(unsent)
        if left:
            shown = ", ".join(s.message.label() for s in left[:4])
            more = f" and {len(left) - 4} more" if len(left) > 4 else ""
            self.problems.add(
                "not_sent",
                f"{why}; {len(left)} recorded client message(s) were never sent: {shown}{more}",
                left[0].message.seq,
            )
        for token, seq in self._pending.items():
            self.problems.add(
                "no_answer",
                f"the agent never answered {self.by_seq[seq].label()} (sent with id {token})",
                seq,
            )

    # -- answering the agent -------------------------------------------------------------

    def _canon(self, value: Any) -> Any:
        return canonical(
            value,
            known_session=lambda s: s in self.mapper.rec_to_live_sid,
            known_cwd=self.mapper.known_recorded_cwd,
            wildcards=_WILDCARDS,
            ignore=self.ignore,
        )

    def _key(self, method: str | None, params: Any) -> bytes:
        return key_of([method, self._canon(params)])

    def _answer(self, live: ReplayMessage) -> bytes:
        token = live.token or "null"
        matches = self._index.lookup(
            self._key(live.method, self.mapper.to_recorded(live.params)), self.mapper.version
        )
        rec = next((m for m in matches if m.seq not in self._used), None)
        again = False
        if rec is None and matches:
            rec, again = matches[-1], True
        if rec is None:
            closest, diffs = closest_request(live, self._asked, self.mapper)
            near = f"; closest recorded is {closest.label()}: {summarise(diffs)}" if closest else ""
            message = f"the agent asked {live.method}, which the recording has no answer for{near}"
            self.problems.add("new_request", message, details=tuple(diffs))
            return _error(token, f"acp-proxy replay: {message}")
        self._used.add(rec.seq)
        if again:
            message = f"the agent asked {rec.label()} again; answered as recorded before"
            self.problems.add("note", message, rec.seq, note=True)
        if rec.partner is None:
            message = f"recorded {rec.label()} was never answered by the recorded client"
            self.problems.add("new_request", message, rec.seq)
            return _error(token, f"acp-proxy replay: {message}")
        answer = self.by_seq[rec.partner]
        if not isinstance(answer.value, dict):
            return answer.raw
        value = self.mapper.to_live(answer.value)
        if value == answer.value and token == answer.token:
            return answer.raw
        return dump_with_id(value, token)


def _error(token: str, message: str) -> bytes:
    error = {"code": -32603, "message": message}
    return dump_with_id({"jsonrpc": "2.0", "id": None, "error": error}, token)


def _tail(messages: list[ReplayMessage], client_eof_ns: int | None) -> Wait | None:
    """What the agent said after the client's last message, up to the client closing its
    stdin (``client_eof_ns``; all of it when unknown): the replay waits for as much before
    it closes the agent's stdin (a v2 turn ends with an idle ``state_update`` that follows
    the answer to the client's last request)."""
    last_client = max((i for i, m in enumerate(messages) if m.direction is C2A
                       and m.kind in (Kind.REQUEST, Kind.NOTIFICATION)), default=-1)  # fmt: skip
    after = [
        m
        for m in messages[last_client + 1 :]
        if m.direction is A2C and (client_eof_ns is None or m.t_ns <= client_eof_ns)
    ]
    if not after:
        return None
    p = after[-1]
    if p.is_response and p.partner is not None:
        return Wait(p, request=p.partner)
    key = shape(p)
    return Wait(p, shape=key, ordinal=sum(1 for x in after if shape(x) == key))


def _steps(messages: list[ReplayMessage]) -> list[Step]:
    """The recorded client requests and notifications, each with what it waits for."""
    steps: list[Step] = []
    since: list[ReplayMessage] = []  # agent messages since the previous step
    open_requests: set[int] = set()
    for m in messages:
        if m.direction is A2C:
            since.append(m)
            if m.is_response and m.partner is not None:
                open_requests.discard(m.partner)
            continue
        if m.kind not in (Kind.REQUEST, Kind.NOTIFICATION):
            continue  # answers to the agent are sent when it asks; invalid frames are not sent
        wait: Wait | None = None
        if since:
            p = since[-1]
            if p.is_response and p.partner is not None:
                wait = Wait(p, request=p.partner)
            else:
                key = shape(p)
                ordinal = sum(1 for x in since if shape(x) == key)
                wait = Wait(p, shape=key, ordinal=ordinal, open=frozenset(open_requests))
        steps.append(Step(len(steps), m, wait))
        if m.kind == Kind.REQUEST and m.partner is not None:
            open_requests.add(m.seq)
        since = []
    return steps

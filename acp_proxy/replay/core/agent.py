"""Standing in for the agent from a recording (pure state machine, sans-I/O).

What belongs here: deciding, for each message a live client sends, which recorded agent
messages answer it and which come next. :class:`AgentStandIn` takes the live client's bytes
and returns :class:`Emit` values (bytes to send, with the recorded time they stand for) and
notes :class:`Problem` values; the I/O (stdio, WebSocket, timing) is in ``replay/serve.py``.

How the recording is played:

- A live client request is matched with a recorded one by method and canonical params
  (``replay.canonical``: ``_meta``, ids, timestamps ignored, sessions and cwds mapped).
  Repeated identical requests take the recorded answers in order. The recorded answer is sent
  with the live request's id (docs/protocol.md §1) and the live session ids and paths.
- Each recorded agent message waits for the client messages it followed in the recording:
  a response for its own request, and every message for the client message nearest before
  it (in *lenient* mode, other client requests in between are skipped over, so independent
  requests may come in another order; ``replay.order`` keeps this schedule). Agent→client
  requests (permission, fs, terminal, docs/protocol.md §4.1) go out with their recorded ids;
  what follows them waits for the live client's answer, which is paired by that id and
  compared with the recorded answer.
- *strict* mode: client messages must come in the recorded order, and every agent message
  waits for all client messages recorded before it.
- A request with no recorded answer gets a JSON-RPC error naming the closest recorded
  request and how it differs (code -32601 when the method was never recorded, else -32602).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from acp_proxy.protocol.frames import Direction
from acp_proxy.protocol.jsonrpc import Kind, classify, id_token
from acp_proxy.replay.core.canonical import (
    Difference,
    canonical,
    differences,
    dump,
    dump_with_id,
    key_of,
    summarise,
)
from acp_proxy.replay.core.mapper import Mapper
from acp_proxy.replay.core.match import (
    KeyIndex,
    Problem,
    Problems,
    ReplayMessage,
    closest_request,
    live_message,
)
from acp_proxy.replay.core.order import Schedule

__all__ = ["AgentStandIn", "Emit", "MatchMode"]

C2A, A2C = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT


class MatchMode(enum.Enum):
    STRICT = "strict"
    LENIENT = "lenient"


@dataclass(frozen=True, slots=True)
class Emit:
    """Bytes to send to the client (no terminator). ``recorded`` is the message they stand
    for (``None`` for an error we made up); ``terminated`` says whether a ``\\n`` follows."""

    data: bytes
    recorded: ReplayMessage | None
    terminated: bool = True


@dataclass(slots=True)
class _State:
    received: set[int] = field(default_factory=set)  # recorded c2a seqs the client sent
    emitted: set[int] = field(default_factory=set)  # recorded a2c seqs sent
    live_id: dict[int, str] = field(default_factory=dict)  # recorded request seq → live token
    asked: dict[str, int] = field(default_factory=dict)  # agent request token → its seq


class AgentStandIn:
    """Feed the live client's frames to :meth:`receive`; send what it returns."""

    def __init__(
        self, messages: Iterable[ReplayMessage], mode: MatchMode = MatchMode.LENIENT
    ) -> None:
        self.messages = [m for m in messages]
        self.by_seq = {m.seq: m for m in self.messages}
        self.mode = mode
        self.mapper = Mapper()
        self.problems = Problems()
        self.last_matched: ReplayMessage | None = None  # the recorded message the last input was
        self._s = _State()
        self._client = [m for m in self.messages if m.direction is C2A and m.kind != Kind.INVALID]
        self._agent = [m for m in self.messages if m.direction is A2C]
        self._schedule = Schedule(self.messages, self.by_seq, strict=mode is MatchMode.STRICT)
        self._next_client = 0  # strict: the first client message not received yet
        self._by_method: dict[tuple[str, str | None], list[ReplayMessage]] = {}
        for m in self._client:
            self._by_method.setdefault((m.kind, m.method), []).append(m)
        self._index = KeyIndex(self._client, lambda m: self._key(m.kind, m.method, m.params))

    # -- public ------------------------------------------------------------------------

    @property
    def clean(self) -> bool:
        return not any(not p.note for p in self.problems)

    @property
    def done(self) -> bool:
        """Every recorded message has been received or sent."""
        return len(self._s.emitted) == len(self._agent) and len(self._s.received) == len(
            self._client
        )

    def start(self) -> list[Emit]:
        """What the agent said before the client said anything."""
        return self._pump()

    def receive(self, raw: bytes) -> list[Emit]:
        self.last_matched = None
        info = classify(raw)
        value = info.value
        if info.kind == Kind.INVALID or not isinstance(value, dict):
            what = "batch" if info.kind == Kind.BATCH else "frame that is not JSON-RPC"
            self.problems.add("unexpected_message", f"ignored a {what} from the client")
            return []
        live = live_message(raw, info, C2A)
        if info.kind == Kind.REQUEST:
            return self._request(live)
        if info.kind == Kind.NOTIFICATION:
            return self._notification(live)
        return self._answer(live)

    def finish(self) -> list[Problem]:
        """The client went away: account for what was never received or sent."""
        before = len(self.problems)
        missing = [
            m
            for m in self._client
            if m.seq not in self._s.received
            and (not m.is_response or (m.partner is not None and m.partner in self._s.emitted))
        ]
        if missing:
            shown = ", ".join(m.label() for m in missing[:4])
            more = f" and {len(missing) - 4} more" if len(missing) > 4 else ""
            self.problems.add(
                "not_received",
                f"the client never sent {len(missing)} recorded message(s): {shown}{more}",
                missing[0].seq,
            )
        unsent = [m for m in self._agent if m.seq not in self._s.emitted]
        if unsent:
            first = unsent[0]
            self.problems.add(
                "not_sent",
                f"{len(unsent)} recorded agent message(s) were never sent, from {first.label()} "
                f"(waiting for {self._waiting_for(first)})",
                first.seq,
            )
        return self.problems[before:]

    # -- client messages -----------------------------------------------------------------

    def _request(self, live: ReplayMessage) -> list[Emit]:
        rec = self._match(live)
        if rec is None:
            return [self._error_reply(live)]
        self._receive(rec.seq)
        self.last_matched = rec
        self._s.live_id[rec.seq] = live.token or "null"
        if rec.partner is None:
            message = f"recorded {rec.label()} was never answered in the recording; nor will it be"
            self.problems.add("note", message, rec.seq, note=True)
        self.mapper.learn(live.params, rec.params)
        return self._pump()

    def _notification(self, live: ReplayMessage) -> list[Emit]:
        rec = self._match(live)
        if rec is None:
            closest, diffs = closest_request(live, self._candidates(live), self.mapper)
            where = (
                f"; closest recorded is {closest.label()}: {summarise(diffs)}" if closest else ""
            )
            self.problems.add(
                "unexpected_message",
                f"the client sent a {live.method} notification that was not recorded{where}",
                details=tuple(diffs),
            )
            return []
        self._receive(rec.seq)
        self.last_matched = rec
        self.mapper.learn(live.params, rec.params)
        return self._pump()

    def _answer(self, live: ReplayMessage) -> list[Emit]:
        asked_seq = self._s.asked.pop(live.token or "", None)
        if asked_seq is None:
            self.problems.add(
                "unexpected_message",
                f"the client sent a response with id {live.token} to no request of ours",
            )
            return []
        asked = self.by_seq[asked_seq]
        if asked.partner is None:
            message = f"{asked.label()} was never answered in the recording"
            self.problems.add("note", message, asked_seq, note=True)
            return self._pump()
        rec = self.by_seq[asked.partner]
        self._receive(rec.seq)
        self.last_matched = rec
        want = self._canon(rec.outcome)
        got = self._canon(self.mapper.to_recorded(live.outcome))
        if want != got:
            diffs = differences(want, got)
            self.problems.add(
                "different_answer",
                f"the client answered {asked.method} [{asked.token}] differently from the "
                f"recording ({summarise(diffs)}); the replay goes on as recorded",
                rec.seq,
                details=tuple(diffs),
            )
        return self._pump()

    def _match(self, live: ReplayMessage) -> ReplayMessage | None:
        if self.mode is MatchMode.STRICT:
            nxt = self._first_unreceived()
            if nxt is None or nxt.kind != live.kind:
                return None
            return nxt if self._equal(live, nxt) else None
        key = self._key(live.kind, live.method, self._live_params(live))
        for m in self._index.lookup(key, self.mapper.version):
            if m.seq not in self._s.received:
                return m
        candidates = self._candidates(live)
        if live.method == "initialize" and candidates:
            rec = candidates[0]  # one per connection: another editor version may differ
            diffs = differences(self._canon(rec.params), self._canon(live.params))
            message = (
                f"initialize differs from the recording ({summarise(diffs)}); "
                "answering with the recorded one"
            )
            self.problems.add("note", message, rec.seq, note=True)
            return rec
        return None

    def _candidates(self, live: ReplayMessage) -> list[ReplayMessage]:
        same = self._by_method.get((live.kind, live.method), [])
        return [m for m in same if m.seq not in self._s.received]

    def _first_unreceived(self) -> ReplayMessage | None:
        while (
            self._next_client < len(self._client)
            and self._client[self._next_client].seq in self._s.received
        ):
            self._next_client += 1
        return self._client[self._next_client] if self._next_client < len(self._client) else None

    def _receive(self, seq: int) -> None:
        self._s.received.add(seq)
        self._schedule.received(seq)

    def _canon(self, value: Any) -> Any:
        return canonical(
            value,
            known_session=lambda s: s in self.mapper.rec_to_live_sid,
            known_cwd=self.mapper.known_recorded_cwd,
        )

    def _equal(self, live: ReplayMessage, rec: ReplayMessage) -> bool:
        if live.method != rec.method:
            return False
        return bool(self._canon(self._live_params(live)) == self._canon(rec.params))

    def _live_params(self, live: ReplayMessage) -> Any:
        """A live message's params in the recording's terms."""
        params = self.mapper.to_recorded(live.params)
        if live.method == "$/cancel_request" and isinstance(params, dict):
            params = {**params, "requestId": self._recorded_id(params.get("requestId"))}
        return params

    def _key(self, kind: str, method: str | None, params: Any) -> bytes:
        return key_of([kind, method, self._canon(params)])

    def _recorded_id(self, value: Any) -> Any:
        """The recorded id of a request the live client sent with id ``value`` (§7.3: a
        client's ``$/cancel_request`` names its own request)."""
        token = id_token(value)
        for seq, live in self._s.live_id.items():
            if live == token:
                return self.by_seq[seq].id
        return value

    def _error_reply(self, live: ReplayMessage) -> Emit:
        recorded_methods = {m.method for m in self._client if m.kind == Kind.REQUEST}
        if self.mode is MatchMode.STRICT:
            nxt = self._first_unreceived()
            closest, diffs = nxt, self._diff(live, nxt) if nxt is not None else []
            why = f"expected {nxt.label()} next (strict order)" if nxt else "the recording ended"
        else:
            closest, diffs = closest_request(
                live, [m for m in self._client if m.kind == Kind.REQUEST], self.mapper
            )
            why = ""
            if closest is not None and not diffs:
                n = sum(1 for m in self._client if self._equal(live, m))
                why = f"all {n} recorded answers to this request were already used"
        if closest is not None:
            how = why or summarise(diffs)
            text = f"closest recorded request is {closest.label()}: {how}"
        else:
            names = ", ".join(sorted(filter(None, recorded_methods)))
            text = "; ".join(filter(None, [why, f"recorded methods: {names}"]))
        message = f"no recorded answer for {live.method}; {text}"
        code = -32601 if live.method not in recorded_methods else -32602
        self.problems.add("unmatched_request", message, details=tuple(diffs))
        near = None if closest is None else {"seq": closest.seq, "method": closest.method}
        error = {
            "code": code,
            "message": f"acp-proxy replay: {message}",
            "data": {"closest": near, "differences": [d.to_json() for d in diffs]},
        }
        data = dump_with_id({"jsonrpc": "2.0", "id": None, "error": error}, live.token or "null")
        return Emit(data, None)

    def _diff(self, live: ReplayMessage, rec: ReplayMessage) -> list[Difference]:
        want = self._canon({"method": rec.method, "params": rec.params})
        got = self._canon({"method": live.method, "params": self.mapper.to_recorded(live.params)})
        return differences(want, got)

    # -- agent messages --------------------------------------------------------------------

    def _pump(self) -> list[Emit]:
        """Send what has become ready (``replay.order`` says what that is)."""
        return [self._emit(m) for m in self._schedule.ready()]

    def _emit(self, m: ReplayMessage) -> Emit:
        self._s.emitted.add(m.seq)
        value = m.value
        if not isinstance(value, dict):
            return Emit(m.raw, m, m.terminated)  # invalid or batch: replayed as recorded
        if m.kind == Kind.REQUEST and m.token is not None:
            self._s.asked[m.token] = m.seq
        if m.is_response and isinstance(value.get("result"), dict):
            sid = value["result"].get("sessionId")
            if isinstance(sid, str) and sid not in self.mapper.rec_to_live_sid:
                self.mapper.add_session(sid, sid)  # a session we create keeps its recorded id
        live = self.mapper.to_live(value)
        token = m.token
        if m.is_response and m.partner is not None:
            token = self._s.live_id.get(m.partner, m.token)
        if live == value and token == m.token:
            return Emit(m.raw, m, m.terminated)
        if token is None:
            return Emit(dump(live), m, m.terminated)
        return Emit(dump_with_id(live, token), m, m.terminated)

    def _waiting_for(self, m: ReplayMessage) -> str:
        need = sorted(self._schedule.deps[m.seq] - self._s.received)
        return ", ".join(self.by_seq[s].label() for s in need[:3]) or "nothing"

"""Recorded and live messages, and matching one against the others (pure, sans-I/O).

What belongs here: reading a capture's frames into :class:`ReplayMessage` values (parsed, paired
with their partner by direction and id token, docs/protocol.md §1), what a message is about
(its session, its shape), the closest recorded message to a live one, an index of recorded
messages by their canonical key, and the :class:`Problem` records both stand-ins report.
The canonical form messages are compared in is :mod:`acp_proxy.replay.core.canonical`'s, the
mapping of sessions and paths between two runs :mod:`acp_proxy.replay.core.mapper`'s. Both
stand-ins (``replay.agent``, ``replay.client``) and the run comparison (``replay.compare``)
build on these.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from acp_proxy.protocol.frames import Direction, Frame
from acp_proxy.protocol.jsonrpc import Info, Kind, classify
from acp_proxy.protocol.pairing import Pairing
from acp_proxy.replay.core.canonical import Difference, canonical, differences
from acp_proxy.replay.core.mapper import Mapper

__all__ = [
    "KeyIndex",
    "Problem",
    "Problems",
    "ReplayMessage",
    "closest_request",
    "live_message",
    "parse_messages",
    "session_of",
    "shape",
]


@dataclass(slots=True)
class ReplayMessage:
    """One recorded (or live) frame, parsed.

    ``method`` of a response is the method of the request it answers; ``partner`` is the seq
    of the paired request or response (``None`` when there is none). ``id`` is the parsed id,
    ``token`` its exact JSON text.
    """

    seq: int
    direction: Direction
    t_ns: int
    raw: bytes
    terminated: bool
    kind: str
    method: str | None
    id: Any
    token: str | None
    value: Any
    update_kind: str | None = None
    partner: int | None = None

    @property
    def params(self) -> Any:
        return self.value.get("params") if isinstance(self.value, dict) else None

    @property
    def is_response(self) -> bool:
        return self.kind in (Kind.RESPONSE, Kind.ERROR)

    @property
    def outcome(self) -> Any:
        """What a response says: ``{"result": …}`` or ``{"error": …}``."""
        if not isinstance(self.value, dict):
            return None
        if "error" in self.value:
            return {"error": self.value["error"]}
        return {"result": self.value.get("result")}

    def label(self) -> str:
        ident = f" [{self.token}]" if self.token is not None else ""
        what = self.method or self.kind
        if self.update_kind:
            what = f"{what} {self.update_kind}"
        kind = "answer to" if self.is_response else self.kind
        return f"#{self.seq} {kind} {what}{ident}"


def live_message(raw: bytes, info: Info, direction: Direction) -> ReplayMessage:
    """A message from a live peer (no recorded seq or time); ``info.value`` is a dict."""
    value = info.value
    return ReplayMessage(
        seq=-1,
        direction=direction,
        t_ns=0,
        raw=raw,
        terminated=True,
        kind=info.kind,
        method=info.method,
        id=value.get("id"),
        token=info.id,
        value=value,
        update_kind=info.update_kind,
    )


def parse_messages(frames: Iterable[Frame]) -> list[ReplayMessage]:
    """Parse and pair frames (pairing key: direction of the request and id token)."""
    out: list[ReplayMessage] = []
    pending: Pairing[ReplayMessage] = Pairing()  # the one rule: direction of the request, id token
    for f in frames:
        info = classify(f.raw)
        value = info.value if info.kind != Kind.INVALID else None
        ident = value.get("id") if isinstance(value, dict) else None
        m = ReplayMessage(
            seq=f.seq,
            direction=f.direction,
            t_ns=f.t_ns,
            raw=f.raw,
            terminated=f.terminated,
            kind=info.kind,
            method=info.method,
            id=ident,
            token=info.id,
            value=value,
            update_kind=info.update_kind,
        )
        if m.kind == Kind.REQUEST and m.token is not None:
            pending.request(m.direction, m.token, m)
        elif m.is_response and m.token is not None:
            request, _ = pending.response(m.direction, m.token, error=m.kind == Kind.ERROR)
            if request is not None:
                request.partner = m.seq
                m.partner = request.seq
                m.method = request.method
        out.append(m)
    return out


def session_of(m: ReplayMessage, by_seq: Mapping[int, ReplayMessage] | None = None) -> str | None:
    """The ACP session a message belongs to (params, result, or its request's params)."""
    v = m.value
    if not isinstance(v, dict):
        return None
    for part in ("params", "result"):
        d = v.get(part)
        if isinstance(d, dict) and isinstance(d.get("sessionId"), str):
            return str(d["sessionId"])
    if by_seq is not None and m.partner is not None and m.partner in by_seq:
        return session_of(by_seq[m.partner])
    return None


def shape(m: ReplayMessage) -> tuple[str, ...]:
    """What kind of thing a message is, for counting "the 3rd chunk since the prompt"."""
    head: tuple[str, ...] = (m.direction.value, m.kind, m.method or "")
    if m.update_kind:
        head += (m.update_kind,)
        update = m.params.get("update") if isinstance(m.params, dict) else None
        if isinstance(update, dict) and isinstance(update.get("state"), str):
            head += (update["state"],)  # v2 state_update: running / idle / requires_action
    return head


@dataclass(frozen=True, slots=True)
class Problem:
    """Something that kept the replay from running clean (``note`` problems do not)."""

    kind: str  # unmatched_request, unexpected_message, different_answer, not_received, ...
    message: str
    seq: int | None = None
    note: bool = False
    details: tuple[Difference, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "message": self.message,
            "seq": self.seq,
            "note": self.note,
            "differences": [d.to_json() for d in self.details],
        }


class Problems(list[Problem]):
    """The problems a stand-in reports, in the order it met them."""

    def add(
        self,
        kind: str,
        message: str,
        seq: int | None = None,
        *,
        note: bool = False,
        details: Iterable[Difference] = (),
    ) -> None:
        self.append(Problem(kind, message, seq, note, tuple(details)))


def closest_request(
    live: ReplayMessage, recorded: list[ReplayMessage], mapper: Mapper
) -> tuple[ReplayMessage | None, list[Difference]]:
    """The recorded message most like ``live`` (same method first, fewest differences)."""
    best: tuple[int, ReplayMessage, list[Difference]] | None = None
    known_cwd = mapper.known_recorded_cwd
    same = [m for m in recorded if m.method == live.method]
    for m in same or recorded:
        want = canonical({"method": m.method, "params": m.params}, known_cwd=known_cwd)
        got = canonical(
            {"method": live.method, "params": mapper.to_recorded(live.params)}, known_cwd=known_cwd
        )
        diffs = differences(want, got, limit=50)
        score = len(diffs) + (1000 if m.method != live.method else 0)
        if best is None or score < best[0]:
            best = (score, m, diffs[:5])
    if best is None:
        return None, []
    return best[1], best[2]


class KeyIndex:
    """Recorded messages by canonical key, rebuilt when the mapper learns something new, so
    matching a live message costs one lookup rather than a scan of the recording."""

    def __init__(
        self, messages: Iterable[ReplayMessage], key: Callable[[ReplayMessage], bytes]
    ) -> None:
        self._messages = list(messages)
        self._key = key
        self._version = -1
        self._index: dict[bytes, list[ReplayMessage]] = {}

    def lookup(self, key: bytes, version: int) -> list[ReplayMessage]:
        """The recorded messages with this key, in recorded order."""
        if version != self._version:
            self._index = {}
            for m in self._messages:
                self._index.setdefault(self._key(m), []).append(m)
            self._version = version
        return self._index.get(key, [])

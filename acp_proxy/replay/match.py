"""Matching recorded messages against live ones (pure, sans-I/O; used by replay).

What belongs here: reading a capture's frames into :class:`Message` values (parsed, paired
with their partner by direction and id token, docs/protocol.md §1), the :class:`Mapper` that keeps
the volatile values of two runs consistent (session ids both ways, working directories as
path prefixes), the canonical form two messages are compared in, readable field-by-field
differences, the closest recorded message to a live one, and the :class:`Problem` records
both stand-ins report. Nothing here does I/O; both stand-ins (``replay.agent``,
``replay.client``) and the run comparison (``replay.compare``) build on it.

Volatile fields (ignored or remapped when comparing, docs/protocol.md §7.1, §12.6):
``_meta`` at any level (trace context, per-run data), ``null`` members (an SDK may leave
out an optional field another writes as ``null``), the JSON-RPC ``id`` (each side numbers
its own requests), ``sessionId`` values (mapped once learnt, a wildcard before), the
``cwd`` of session requests (mapped once learnt) and every path under it, ISO 8601
timestamps, and any key the caller names as a wildcard (``toolCallId`` when driving a real
agent, whose ids are random per run).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from acp_proxy.protocol.frames import Direction, Frame
from acp_proxy.protocol.jsonrpc import Info, Kind, classify
from acp_proxy.protocol.pairing import Pairing

__all__ = [
    "Difference",
    "KeyIndex",
    "Mapper",
    "Message",
    "Problem",
    "canonical",
    "closest_request",
    "differences",
    "dump",
    "dump_with_id",
    "key_of",
    "parse_messages",
    "session_of",
    "shape",
    "summarise",
]

_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$")
_ID_MARK = "@@acp-proxy-replay-id@@"
_CWD_KEYS = ("cwd",)


@dataclass(slots=True)
class Message:
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


def live_message(raw: bytes, info: Info, direction: Direction) -> Message:
    """A message from a live peer (no recorded seq or time); ``info.value`` is a dict."""
    value = info.value
    return Message(
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


def parse_messages(frames: Iterable[Frame]) -> list[Message]:
    """Parse and pair frames (pairing key: direction of the request and id token)."""
    out: list[Message] = []
    pending: Pairing[Message] = Pairing()  # the one rule: direction of the request, id token
    for f in frames:
        info = classify(f.raw)
        value = info.value if info.kind != Kind.INVALID else None
        ident = value.get("id") if isinstance(value, dict) else None
        m = Message(
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


def session_of(m: Message, by_seq: Mapping[int, Message] | None = None) -> str | None:
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


def shape(m: Message) -> tuple[str, ...]:
    """What kind of thing a message is, for counting "the 3rd chunk since the prompt"."""
    head: tuple[str, ...] = (m.direction.value, m.kind, m.method or "")
    if m.update_kind:
        head += (m.update_kind,)
        update = m.params.get("update") if isinstance(m.params, dict) else None
        if isinstance(update, dict) and isinstance(update.get("state"), str):
            head += (update["state"],)  # v2 state_update: running / idle / requires_action
    return head


class Mapper:
    """Keeps two runs' volatile values consistent: session ids and working directories.

    ``to_recorded`` turns a live value into the recording's terms, ``to_live`` the other way.
    Session ids are a bijection learnt as they appear; working directories are path prefixes
    (the longest known prefix wins), applied to every string, so ``file://`` URIs and diff
    paths under the old workspace follow too.
    """

    def __init__(self, cwd_pairs: Iterable[tuple[str, str]] = ()) -> None:
        self.rec_to_live_sid: dict[str, str] = {}
        self.live_to_rec_sid: dict[str, str] = {}
        self.cwds: list[tuple[str, str]] = []  # (recorded, live)
        self.version = 0  # bumped on every new mapping: canonical forms change with it
        for rec, live in cwd_pairs:
            self.add_cwd(rec, live)

    def add_session(self, recorded: str, live: str) -> bool:
        """Learn that ``recorded`` is ``live``; False when either is already taken."""
        if self.rec_to_live_sid.get(recorded, live) != live:
            return False
        if self.live_to_rec_sid.get(live, recorded) != recorded:
            return False
        if recorded not in self.rec_to_live_sid:
            self.version += 1
        self.rec_to_live_sid[recorded] = live
        self.live_to_rec_sid[live] = recorded
        return True

    def add_cwd(self, recorded: str, live: str) -> None:
        recorded, live = recorded.rstrip("/") or "/", live.rstrip("/") or "/"
        if recorded == "/" or live == "/" or any(r == recorded for r, _ in self.cwds):
            return
        self.cwds.append((recorded, live))
        self.cwds.sort(key=lambda p: -len(p[0]))
        self.version += 1

    def known_recorded_cwd(self, path: str) -> bool:
        return any(path.rstrip("/") == r for r, _ in self.cwds)

    def to_recorded(self, value: Any) -> Any:
        pairs = [(live, rec) for rec, live in self.cwds if rec != live]
        return _rewrite(value, self.live_to_rec_sid, pairs)

    def to_live(self, value: Any) -> Any:
        pairs = [(rec, live) for rec, live in self.cwds if rec != live]
        return _rewrite(value, self.rec_to_live_sid, pairs)

    def learn(self, live: Any, recorded: Any, *, top: bool = True) -> None:
        """Walk two matching values side by side and learn sessions and cwds from them."""
        if isinstance(live, dict) and isinstance(recorded, dict):
            for k, lv in live.items():
                if k not in recorded:
                    continue
                rv = recorded[k]
                if k == "sessionId" and isinstance(lv, str) and isinstance(rv, str):
                    self.add_session(rv, lv)
                elif k in _CWD_KEYS and isinstance(lv, str) and isinstance(rv, str):
                    if lv.startswith("/") and rv.startswith("/"):
                        self.add_cwd(rv, lv)
                elif k != "_meta":
                    self.learn(lv, rv, top=False)
        elif isinstance(live, list) and isinstance(recorded, list):
            for lv, rv in zip(live, recorded, strict=False):
                self.learn(lv, rv, top=False)


def _replace_prefix(s: str, pairs: list[tuple[str, str]]) -> str:
    for old, new in pairs:
        if old in s:
            s = re.sub(re.escape(old) + r"(?![\w.\-])", _literal(new), s)
    return s


def _literal(text: str) -> Callable[[re.Match[str]], str]:
    return lambda _m: text


def _rewrite(value: Any, sids: Mapping[str, str], pairs: list[tuple[str, str]]) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if k == "sessionId" and isinstance(v, str):
                out[k] = sids.get(v, v)
            else:
                out[k] = _rewrite(v, sids, pairs)
        return out
    if isinstance(value, list):
        return [_rewrite(v, sids, pairs) for v in value]
    if isinstance(value, str) and pairs:
        return _replace_prefix(value, pairs)
    return value


def canonical(
    value: Any,
    *,
    known_session: Callable[[str], bool] = lambda _s: True,
    known_cwd: Callable[[str], bool] = lambda _s: True,
    wildcards: frozenset[str] = frozenset(),
    ignore: Iterable[tuple[str, ...]] = (),
) -> Any:
    """The form two values are compared in: ``_meta`` and ``null`` members dropped,
    timestamps and unknown
    session ids / cwds replaced by placeholders, ``wildcards`` keys blanked, ``ignore`` paths
    (tuples of keys, ``*`` for any key or index) removed."""
    paths = [tuple(p) for p in ignore]

    def walk(v: Any, path: tuple[str, ...]) -> Any:
        if isinstance(v, dict):
            out: dict[str, Any] = {}
            for k, item in v.items():
                here = (*path, k)
                if k == "_meta" or item is None or _ignored(here, paths):
                    continue  # null and absent: SDKs write optional fields either way
                if k in wildcards:
                    out[k] = "<id>"
                elif k == "sessionId" and isinstance(item, str):
                    out[k] = item if known_session(item) else "<session>"
                elif k in _CWD_KEYS and isinstance(item, str) and len(path) <= 1:
                    out[k] = item if known_cwd(item) else "<cwd>"
                else:
                    out[k] = walk(item, here)
            return out
        if isinstance(v, list):
            return [
                walk(item, (*path, str(i)))
                for i, item in enumerate(v)
                if not _ignored((*path, str(i)), paths)
            ]
        if isinstance(v, str) and _TIMESTAMP.match(v):
            return "<time>"
        return v

    return walk(value, ())


def _ignored(path: tuple[str, ...], patterns: list[tuple[str, ...]]) -> bool:
    for p in patterns:
        if len(p) == len(path) and all(a == "*" or a == b for a, b in zip(p, path, strict=True)):
            return True
    return False


@dataclass(frozen=True, slots=True)
class Difference:
    """One field that differs: where, what was recorded, what came instead."""

    path: str
    recorded: Any
    live: Any

    def __str__(self) -> str:
        return f"{self.path or '(value)'}: recorded {_show(self.recorded)}, got {_show(self.live)}"

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "recorded": self.recorded, "live": self.live}


_MISSING = "<missing>"


def _show(v: Any) -> str:
    if v is _MISSING or v == _MISSING:
        return "nothing"
    text = dump(v).decode("utf-8", "replace")
    return text if len(text) <= 60 else text[:59] + "…"


def differences(recorded: Any, live: Any, limit: int = 5) -> list[Difference]:
    """Field-by-field differences between two canonical values (at most ``limit``)."""
    out: list[Difference] = []

    def walk(a: Any, b: Any, path: str) -> None:
        if len(out) >= limit:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for k in list(a) + [k for k in b if k not in a]:
                walk(a.get(k, _MISSING), b.get(k, _MISSING), f"{path}.{k}" if path else k)
            return
        if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                walk(x, y, f"{path}[{i}]")
            return
        if a != b or type(a) is not type(b):
            out.append(Difference(path, a, b))

    walk(recorded, live, "")
    return out


def summarise(diffs: list[Difference]) -> str:
    return "; ".join(str(d) for d in diffs) if diffs else "no difference"


def dump(value: Any) -> bytes:
    """Compact JSON, as the SDKs write it (ints wider than 64 bits kept exact)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        import json

        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def dump_with_id(value: dict[str, Any], token: str) -> bytes:
    """``value`` as compact JSON with its ``id`` written as the exact JSON text ``token``."""
    marked = dict(value)
    marked["id"] = _ID_MARK
    return dump(marked).replace(orjson.dumps(_ID_MARK), token.encode(), 1)


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


def closest_request(
    live: Message, recorded: list[Message], mapper: Mapper
) -> tuple[Message | None, list[Difference]]:
    """The recorded message most like ``live`` (same method first, fewest differences)."""
    best: tuple[int, Message, list[Difference]] | None = None
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


def key_of(value: Any) -> bytes:
    """A hashable form of a canonical value (keys sorted)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        import json

        return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


class KeyIndex:
    """Recorded messages by canonical key, rebuilt when the mapper learns something new, so
    matching a live message costs one lookup rather than a scan of the recording."""

    def __init__(self, messages: Iterable[Message], key: Callable[[Message], bytes]) -> None:
        self._messages = list(messages)
        self._key = key
        self._version = -1
        self._index: dict[bytes, list[Message]] = {}

    def lookup(self, key: bytes, version: int) -> list[Message]:
        """The recorded messages with this key, in recorded order."""
        if version != self._version:
            self._index = {}
            for m in self._messages:
                self._index.setdefault(self._key(m), []).append(m)
            self._version = version
        return self._index.get(key, [])

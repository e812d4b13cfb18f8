"""Keeping two runs' volatile values consistent (pure, sans-I/O; used by replay).

What belongs here: :class:`Mapper` — the session ids two runs of the same conversation
handed out, learnt both ways as they appear, and the working directories, as path prefixes
applied to every string — and the rewriting of a value from one run's terms into the
other's; and how the sessions of two runs correspond (:func:`session_pairs`,
:class:`Children`). A child session the agent created (announced by ``subagent_update`` on
its parent, docs/protocol.md §13.1) has a fresh id in every run: it is the child announced
at the same place of its parent — the parent's first child is the other run's first child
of the same parent — never the session that happens to be mentioned at the same place of
the whole run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from acp_proxy.replay.core.canonical import CWD_KEYS

__all__ = [
    "Children",
    "Mapper",
    "RunSessions",
    "child_announced",
    "children_of",
    "pair_sessions",
    "run_sessions",
    "session_pairs",
]


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

    def changes_nothing(self) -> bool:
        """Whether every session and path maps to itself (two runs of one recording, or
        runs that happened to use the same ids): values are then the same either way."""
        same_ids = all(k == v for k, v in self.live_to_rec_sid.items())
        return same_ids and all(rec == live for rec, live in self.cwds)

    def learn(self, live: Any, recorded: Any, *, top: bool = True) -> None:
        """Walk two matching values side by side and learn sessions and cwds from them."""
        if isinstance(live, dict) and isinstance(recorded, dict):
            for k, lv in live.items():
                if k not in recorded:
                    continue
                rv = recorded[k]
                if k == "sessionId" and isinstance(lv, str) and isinstance(rv, str):
                    self.add_session(rv, lv)
                elif k in CWD_KEYS and isinstance(lv, str) and isinstance(rv, str):
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


def child_announced(value: Any) -> tuple[str, str] | None:
    """``(parent, child)`` when ``value`` is a ``subagent_update`` announcing or patching a
    child session; None otherwise (whatever its shape)."""
    if not isinstance(value, dict) or value.get("method") != "session/update":
        return None
    params = value.get("params")
    if not isinstance(params, dict):
        return None
    update = params.get("update")
    if not isinstance(update, dict) or update.get("sessionUpdate") != "subagent_update":
        return None
    parent, child = params.get("sessionId"), update.get("sessionId")
    if isinstance(parent, str) and isinstance(child, str) and parent != child:
        return parent, child
    return None


def children_of(values: Iterable[Any]) -> dict[str, list[str]]:
    """Each parent's children, in the order they were first announced."""
    out: dict[str, list[str]] = {}
    seen: set[str] = set()
    for v in values:
        pc = child_announced(v)
        if pc is not None and pc[1] not in seen:
            seen.add(pc[1])
            out.setdefault(pc[0], []).append(pc[1])
    return out


def _mentioned(values: Iterable[Any], skip: set[str]) -> list[str]:
    """Session ids in the order first mentioned (params or result), ``skip`` left out."""
    out: list[str] = []
    for v in values:
        if not isinstance(v, dict):
            continue
        for part in ("params", "result"):
            d = v.get(part)
            sid = d.get("sessionId") if isinstance(d, dict) else None
            if isinstance(sid, str) and sid not in out and sid not in skip:
                out.append(sid)
    return out


@dataclass(frozen=True, slots=True)
class RunSessions:
    """What pairing a run's sessions with another's needs of it: the sessions the client
    opened, in the order first mentioned, and each parent's children in the order announced
    (:func:`run_sessions`): a run can be read, summarised and let go before the other."""

    opened: list[str]
    children: dict[str, list[str]]


def run_sessions(values: Iterable[Any]) -> RunSessions:
    """The sessions of a run, from its messages' values (read once)."""
    values = values if isinstance(values, Sequence) else list(values)
    children = children_of(values)
    kids = {c for found in children.values() for c in found}
    return RunSessions(_mentioned(values, kids), children)


def session_pairs(recorded: Sequence[Any], live: Sequence[Any]) -> list[tuple[str, str]]:
    """How two runs' sessions correspond, from their messages' values: the sessions the
    client opened by the order they are first mentioned, each child as the child announced
    at the same place of its parent's (its parent paired first)."""
    return pair_sessions(run_sessions(recorded), run_sessions(live))


def pair_sessions(recorded: RunSessions, live: RunSessions) -> list[tuple[str, str]]:
    """:func:`session_pairs`, from what each run's :func:`run_sessions` kept."""
    kids_r, kids_l = recorded.children, live.children
    pairs = list(zip(recorded.opened, live.opened, strict=False))
    i = 0
    while i < len(pairs):  # parents before their children, breadth first
        r, li = pairs[i]
        pairs.extend(zip(kids_r.get(r, []), kids_l.get(li, []), strict=False))
        i += 1
    return pairs


class Children:
    """Learns a live run's children as they are announced: the ``n``-th child a live parent
    announces is the ``n``-th child the recorded parent announced (``recorded``: the
    recorded run's message values)."""

    def __init__(self, recorded: Iterable[Any]) -> None:
        self.recorded = children_of(recorded)
        self.live: dict[str, list[str]] = {}

    def learn(self, mapper: Mapper, live_value: Any) -> None:
        pc = child_announced(live_value)
        if pc is None:
            return
        parent, child = pc
        if any(child in kids for kids in self.live.values()):
            return
        kids = self.live.setdefault(parent, [])
        kids.append(child)
        recorded = self.recorded.get(mapper.live_to_rec_sid.get(parent, parent), [])
        if len(kids) <= len(recorded):
            mapper.add_session(recorded[len(kids) - 1], child)

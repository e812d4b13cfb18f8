"""Keeping two runs' volatile values consistent (pure, sans-I/O; used by replay).

What belongs here: :class:`Mapper` — the session ids two runs of the same conversation
handed out, learnt both ways as they appear, and the working directories, as path prefixes
applied to every string — and the rewriting of a value from one run's terms into the
other's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from acp_proxy.replay.canonical import CWD_KEYS

__all__ = ["Mapper"]


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

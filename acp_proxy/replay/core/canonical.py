"""The form a recorded and a live message are compared in (pure, sans-I/O; used by replay).

What belongs here: :func:`canonical` (a value with its volatile fields dropped or replaced
by placeholders), readable field-by-field :class:`Difference` values between two canonical
forms, a hashable key of one (:func:`key_of`), and compact JSON as the SDKs write it
(:func:`dump`, :func:`dump_with_id`, which keeps an id's exact text).

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
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = [
    "CWD_KEYS",
    "Difference",
    "canonical",
    "differences",
    "dump",
    "dump_with_id",
    "key_of",
    "summarise",
]

_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$")
_ID_MARK = "@@acp-proxy-replay-id@@"
CWD_KEYS = ("cwd",)


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
                elif k in CWD_KEYS and isinstance(item, str) and len(path) <= 1:
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


def key_of(value: Any) -> bytes:
    """A hashable form of a canonical value (keys sorted)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        import json

        return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()

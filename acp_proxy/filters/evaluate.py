"""A filter tree decided in Python, on a frame's fields (:data:`FIELDS`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from acp_proxy.filters.parser import And, Expr, Match, Not, Or

__all__ = ["FIELDS", "compile_filter", "glob_regex", "matches"]

FIELDS = (
    "method",
    "direction",
    "kind",
    "session_id",
    "update_kind",
    "msg_id",
    "tool_call_id",
    "terminal_id",
    "error_code",
    "anomalies",
    "raw",
)
"""What a frame must give a filter: the ``messages`` columns of these names (``anomalies``
as a sequence of names, ``raw`` as bytes)."""

Fields = Mapping[str, Any]
Test = Callable[[Fields], bool]

_EXACT = {
    "dir": "direction",
    "kind": "kind",
    "session": "session_id",
    "tool": "tool_call_id",
    "terminal": "terminal_id",
}


def glob_regex(glob: str) -> re.Pattern[str]:
    """``*`` any text, ``?`` one character, everything else itself (as SQL's GLOB once
    ``[`` is escaped: :func:`acp_proxy.filters.sql.glob_sql`)."""
    out = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in glob)
    return re.compile(out, re.DOTALL)


def _text(f: Fields) -> str:
    raw = f["raw"]
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes | bytearray) else str(raw)


def _anomaly_test(value: str) -> Test:
    if value in ("any", "*"):
        return lambda f: bool(f["anomalies"])
    wanted = f",{value},"
    return lambda f: wanted in "," + ",".join(f["anomalies"] or ()) + ","


def _error_test(value: str) -> Test:
    if value in ("any", "*"):
        return lambda f: f["error_code"] is not None or f["kind"] == "error"
    code = int(value)
    return lambda f: f["error_code"] == code


def _match(m: Match) -> Test:
    key, value = m.key, m.value
    if key in _EXACT:
        column = _EXACT[key]
        return lambda f: f[column] == value
    if key in ("method", "update"):
        rx = glob_regex(value)
        column = "method" if key == "method" else "update_kind"
        return lambda f: rx.fullmatch(f[column] or "") is not None
    if key == "id":
        ids = (value, '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"')
        return lambda f: f["msg_id"] in ids
    if key == "error":
        return _error_test(value)
    if key == "anomaly":
        return _anomaly_test(value)
    if key == "re":
        rx = re.compile(value)
        return lambda f: rx.search(_text(f)) is not None
    needle = value.lower()
    return lambda f: needle in _text(f).lower()


def compile_filter(expr: Expr | None) -> Test:
    """A predicate for ``expr`` (None: every frame passes)."""
    if expr is None:
        return lambda f: True
    if isinstance(expr, Match):
        return _match(expr)
    if isinstance(expr, Not):
        inner = compile_filter(expr.part)
        return lambda f: not inner(f)
    tests = [compile_filter(p) for p in expr.parts]
    if isinstance(expr, And):
        return lambda f: all(t(f) for t in tests)
    assert isinstance(expr, Or)
    return lambda f: any(t(f) for t in tests)


def matches(expr: Expr | None, fields: Fields) -> bool:
    """Whether a frame with these fields passes ``expr``."""
    return compile_filter(expr)(fields)

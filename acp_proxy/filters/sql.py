"""A filter tree as an SQL condition over the ``messages`` table, with bound parameters.

Text and regular expressions are decided in Python (SQLite has no regular expressions
and its text is not the frame's bytes decoded): a tree holding them gives a condition
every passing frame meets — a first cut — and says it is not exact, so the caller checks
the frames it returns with :func:`~acp_proxy.filters.evaluate.compile_filter`. Every
condition is 0 or 1, never NULL, so ``NOT`` means what Python's ``not`` means.
"""

from __future__ import annotations

from typing import Any

from acp_proxy.filters.parser import And, Expr, Match, Not, Or

__all__ = ["glob_sql", "sql_where"]

_COLUMNS = {
    "dir": "direction",
    "kind": "kind",
    "session": "session_id",
    "tool": "tool_call_id",
    "terminal": "terminal_id",
}

Where = tuple[str, list[Any], bool]


def glob_sql(glob: str) -> str:
    """A glob of the filter language (``*`` and ``?``) for SQLite's GLOB, where ``[``
    opens a character class: written ``[[]`` it is itself."""
    return glob.replace("[", "[[]")


def _match(m: Match) -> Where:
    key, value = m.key, m.value
    if key in _COLUMNS:
        return f"{_COLUMNS[key]} IS ?", [value], True
    if key in ("method", "update"):
        column = "method" if key == "method" else "update_kind"
        return f"COALESCE({column}, '') GLOB ?", [glob_sql(value)], True
    if key == "id":
        quoted = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return "COALESCE(msg_id IN (?, ?), 0)", [value, quoted], True
    if key == "error":
        if value in ("any", "*"):
            return "(error_code IS NOT NULL OR kind IS 'error')", [], True
        return "error_code IS ?", [int(value)], True
    if key == "anomaly":
        if value in ("any", "*"):
            return "COALESCE(anomalies, '') != ''", [], True
        return "instr(',' || COALESCE(anomalies, '') || ',', ?) > 0", [f",{value},"], True
    return "1", [], False  # text, re: decided in Python


def sql_where(expr: Expr | None) -> Where:
    """``(condition, parameters, exact)``: every frame that passes ``expr`` meets the
    condition; when ``exact``, exactly those do."""
    if expr is None:
        return "1", [], True
    if isinstance(expr, Match):
        return _match(expr)
    if isinstance(expr, Not):
        cond, args, exact = sql_where(expr.part)
        return (f"NOT ({cond})", args, True) if exact else ("1", [], False)
    parts = [sql_where(p) for p in expr.parts]
    exact = all(p[2] for p in parts)
    if isinstance(expr, Or) and not exact:
        return "1", [], False
    assert isinstance(expr, And | Or)
    joiner = " AND " if isinstance(expr, And) else " OR "
    kept = [p for p in parts if p[0] != "1"] if isinstance(expr, And) else parts
    if not kept:
        return "1", [], exact
    args = [a for p in kept for a in p[1]]
    return "(" + joiner.join(f"({p[0]})" for p in kept) + ")", args, exact

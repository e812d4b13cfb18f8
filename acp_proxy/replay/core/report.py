"""``acp-proxy diff`` as text: the differences between two sessions (pure).

What belongs here: laying out the :class:`~acp_proxy.replay.core.summary.Divergence` list of two
runs for a person — one line per difference, a word diff under a changed prompt or answer,
a unified diff under a changed file — and the timing table. Strings come from recordings:
the caller prints them through :func:`acp_proxy.cli.common.echo`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Any

from acp_proxy.replay.core.sequences import opcodes
from acp_proxy.replay.core.summary import Divergence

__all__ = ["diff_lines", "timing_lines", "word_diff"]

_WORDS = re.compile(r"\s+|[^\s]+")
_TEXT_FACETS = ("prompt", "answer", "thought")


def word_diff(a: str, b: str) -> str:
    """``a`` → ``b`` word by word: removed words as ``[-…-]``, added ones as ``{+…+}``."""
    wa, wb = _WORDS.findall(a), _WORDS.findall(b)
    out: list[str] = []
    for op, i1, i2, j1, j2 in opcodes(wa, wb):
        if op == "equal":
            out.append("".join(wa[i1:i2]))
            continue
        if i2 > i1:
            out.append(f"[-{''.join(wa[i1:i2])}-]")
        if j2 > j1:
            out.append(f"{{+{''.join(wb[j1:j2])}+}}")
    return "".join(out)


def _file_diff(path: str, a: Any, b: Any) -> list[str]:
    old = a.splitlines(keepends=True) if isinstance(a, str) else []
    new = b.splitlines(keepends=True) if isinstance(b, str) else []
    name = path.lstrip("/")
    lines = difflib.unified_diff(old, new, f"A/{name}", f"B/{name}", n=2)
    return ["    " + line.rstrip("\n") for line in lines]


def diff_lines(divergences: Sequence[Divergence], a_name: str, b_name: str) -> list[str]:
    if not divergences:
        return [f"no differences between {a_name} and {b_name}"]
    out = [f"{len(divergences)} difference(s) between {a_name} (A) and {b_name} (B):"]
    for d in divergences:
        out.append("  " + d.text("A", "B"))
        if d.what in _TEXT_FACETS and isinstance(d.recorded, str) and isinstance(d.replayed, str):
            out.append("    " + word_diff(d.recorded, d.replayed).replace("\n", "\n    "))
        elif d.where == "files" and d.what.startswith("written "):
            out.extend(_file_diff(d.what.removeprefix("written "), d.recorded, d.replayed))
    return out


def _change(a: Any, b: Any) -> str:
    if not isinstance(a, int | float) or not isinstance(b, int | float):
        return ""
    if a == 0:
        return f" ({b - a:+.3f})"
    return f" ({b - a:+.3f}, {100 * (b - a) / a:+.0f}%)"


def timing_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    out = ["timing (not counted as a difference):"]
    for r in rows:
        a = "—" if r["a"] is None else f"{r['a']}"
        b = "—" if r["b"] is None else f"{r['b']}"
        out.append(f"  {r['where']} · {r['what']}: A {a}; B {b}{_change(r['a'], r['b'])}")
    return out

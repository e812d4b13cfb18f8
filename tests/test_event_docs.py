"""docs/storage.md lists every event kind with what it means, from the vocabulary itself
(acp_proxy/events): a kind added without its doc, or a doc of a kind that is gone, fails.

Run ``python tests/test_event_docs.py`` to write the table again."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from acp_proxy.events import KINDS

DOC = Path(__file__).parents[1] / "docs" / "storage.md"
BEGIN, END = "<!-- events:begin -->", "<!-- events:end -->"


def table() -> str:
    rows = ["| kind | what it means | shown as |", "| --- | --- | --- |"]
    for kind, cls in sorted(KINDS.items()):
        doc = " ".join((cls.__doc__ or "").split()).replace("``", "`")
        rows.append(f"| `{kind}` | {doc} | {'an error' if cls.bad else 'an event'} |")
    return "\n".join(rows)


def current() -> str:
    text = DOC.read_text(encoding="utf-8")
    return re.sub(f"{BEGIN}.*?{END}", f"{BEGIN}\n{table()}\n{END}", text, flags=re.S)


def test_every_event_kind_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert BEGIN in text and END in text
    assert text == current(), "docs/storage.md: run python tests/test_event_docs.py"
    for kind, cls in KINDS.items():
        assert cls.__doc__, f"event kind {kind} has no docstring"


def test_every_kind_written_is_in_the_vocabulary() -> None:
    """Every kind the code writes by name (``.event("kind", ...)``) has a line of its own."""
    package = Path(__file__).parents[1] / "acp_proxy"
    written = set()
    for f in package.rglob("*.py"):
        written |= set(re.findall(r'\.event\(\s*"([a-z_]+)"', f.read_text(encoding="utf-8")))
    assert len(written) > 10, "the scan found too few event kinds: is the pattern stale?"
    assert sorted(written - set(KINDS)) == []


if __name__ == "__main__":
    DOC.write_text(current(), encoding="utf-8")
    sys.exit(0)

"""The agent's stderr and the capture events as one log, for pages (pure).

What belongs here: :func:`log_entries`, the stderr writes (cut into lines) and the events
of a capture merged in time order, as values a page renders as text — an event's readable
line (:func:`acp_proxy.events.describe`) and whether it is bad news, a stderr line as pieces
of text each with the CSS classes of the peer's own SGR look (:mod:`acp_proxy.sgr`), every
control character made visible first. The web inspector and the HTML export draw these;
neither ever puts a peer's bytes into markup.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from acp_proxy import sgr
from acp_proxy.events import describe, is_bad
from acp_proxy.text.safe import visible
from acp_proxy.text.timeline import event_detail

__all__ = ["log_entries", "stderr_pieces"]


def stderr_pieces(line: str) -> list[dict[str, Any]]:
    """One stderr line as ``{"text", "classes"}`` pieces (text made visible)."""
    return [
        {"text": visible(text), "classes": look.classes()} for text, look in sgr.parse(line) if text
    ]


def log_entries(
    stderr: Iterable[tuple[int, bytes]], events: Iterable[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Every stderr line and event, oldest first: ``{"t_ms", "source", ...}``; a stderr
    entry has ``pieces`` and ``text`` (colours taken out), an event ``kind``, ``line`` and
    ``bad``."""
    out: list[tuple[int, int, dict[str, Any]]] = []
    n = 0
    for t_ns, data in stderr:
        lines = data.decode("utf-8", "replace").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        for line in lines:
            text = visible(sgr.strip(line))
            entry: dict[str, Any] = {
                "source": "stderr",
                "pieces": stderr_pieces(line),
                "text": text,
            }
            out.append((t_ns, n, entry))
            n += 1
    for ev in events:
        kind = str(ev.get("kind") or "event")
        entry = {
            "source": "event",
            "kind": kind,
            "line": visible(describe(kind, event_detail(ev))),
            "bad": is_bad(kind),
        }
        out.append((int(ev.get("t_ns") or 0), n, entry))
        n += 1
    out.sort(key=lambda x: (x[0], x[1]))
    return [{"t_ms": round(t / 1e6, 3), **e} for t, _, e in out]

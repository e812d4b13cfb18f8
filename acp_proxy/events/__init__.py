"""The capture events: what each kind means, and the line a person reads for it (pure).

What belongs here: the one vocabulary of the ``events`` table — the process, connection and
HTTP story told beside the frames. Each kind is a small class: its ``kind`` (the stored
name), a one-line docstring (what it means: docs/storage.md lists them), whether it is bad
news (shown as an error), and :meth:`Event.line`, the readable line every view prints for it
(``agent exited 3``, ``POST /acp → 200 (34.9 ms, 61 B)``, ``client closed stdin``): the
command line, the HTML export and the web inspector all call :func:`describe`.

An event's ``detail`` comes from the database or from a file someone sent: every field is
read defensively (a missing or ill-typed field is left out of the line, never an error).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from acp_proxy.events import network, process
from acp_proxy.events.base import Event, generic

__all__ = ["KINDS", "Event", "describe", "is_bad"]

KINDS: dict[str, type[Event]] = {
    cls.kind: cls
    for module in (process, network)
    for cls in vars(module).values()
    if isinstance(cls, type) and issubclass(cls, Event) and cls is not Event
}
"""Every event kind we write, by its stored name."""


def describe(kind: str, detail: Mapping[str, Any] | None) -> str:
    """The readable line for an event (an unknown kind: its name and simple fields)."""
    cls = KINDS.get(kind)
    d = detail if isinstance(detail, Mapping) else {}
    return cls.line(d) if cls is not None else generic(kind, d)


def is_bad(kind: str) -> bool:
    """Whether an event of ``kind`` is bad news (shown as an error)."""
    cls = KINDS.get(kind)
    return cls is not None and cls.bad

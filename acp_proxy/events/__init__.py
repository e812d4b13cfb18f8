"""The capture events: one class per kind, written typed and read back defensively (pure).

What belongs here: the one vocabulary of the ``events`` table — the process, connection and
HTTP story told beside the frames. Each kind is a small frozen dataclass: its ``kind`` (the
stored name), a one-line docstring (what it means), its fields (what it holds), whether it
is bad news (shown as an error), and :meth:`Event.line`, the readable line every view
prints for it (``agent exited 3``, ``POST /acp → 200 (34.9 ms, 61 B)``, ``client closed
stdin``). docs/storage.md's table of kinds is made from these classes
(``tests/test_event_docs.py``).

Writing: a relay hands its tap a value, ``tap.event(Spawn(pid=…, argv=[…]))``; what is
stored is :meth:`Event.detail` (the fields in their declared order, those left
:data:`UNSET` out), so the JSON of each kind has one shape, the one it always had.

Reading: an event's ``detail`` comes from the database or from a file someone sent, so it is
never rebuilt into its class: :func:`describe` and :func:`is_bad` read the stored mapping,
every field defensively (a missing or ill-typed field is left out of the line, never an
error). The command line, the HTML export and the web inspector all call them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from acp_proxy.events import network, process
from acp_proxy.events.base import UNSET, Event, Unset, generic
from acp_proxy.events.network import (
    Abandoned,
    BodyEnd,
    Close,
    Connection,
    DirectionEnd,
    Error,
    Handshake,
    HandshakeFailed,
    Http,
    Refused,
    Sse,
    StreamEnd,
    TimedOut,
    TooBig,
    UpstreamFailed,
    UpstreamRefused,
)
from acp_proxy.events.process import (
    AgentEof,
    AgentStdinClosed,
    AgentStdoutAbandoned,
    Chain,
    ClientEof,
    ClientNotRead,
    ClientStdoutClosed,
    Exit,
    Gap,
    OtelDropped,
    RecorderNote,
    Signal,
    Spawn,
    SpawnFailed,
    Terminate,
)

__all__ = [
    "KINDS",
    "UNSET",
    "Abandoned",
    "AgentEof",
    "AgentStdinClosed",
    "AgentStdoutAbandoned",
    "BodyEnd",
    "Chain",
    "ClientEof",
    "ClientNotRead",
    "ClientStdoutClosed",
    "Close",
    "Connection",
    "DirectionEnd",
    "Error",
    "Event",
    "Exit",
    "Gap",
    "Handshake",
    "HandshakeFailed",
    "Http",
    "OtelDropped",
    "RecorderNote",
    "Refused",
    "Signal",
    "Spawn",
    "SpawnFailed",
    "Sse",
    "StreamEnd",
    "Terminate",
    "TimedOut",
    "TooBig",
    "Unset",
    "UpstreamFailed",
    "UpstreamRefused",
    "describe",
    "is_bad",
]

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

"""The values the Python API gives back (pure): what a recording holds, as Python objects.

What belongs here: one small frozen dataclass per thing a person asks a recording for — a
frame, a turn, a tool call, a terminal, a file change, a session, a line of the agent's
stderr, an event — each with the fields most code wants as attributes and, for the
reconstructed views, ``data``: the whole documented JSON of that item (docs/reconstruct.md),
so nothing the command line shows is out of reach. Everything here came from a peer: text is
kept as it was recorded (not made safe to print); print it through ``acp_proxy.text.safe``
if it goes to a terminal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

__all__ = [
    "Event",
    "FileChange",
    "Frame",
    "Session",
    "StderrLine",
    "Terminal",
    "ToolCall",
    "Turn",
]


@dataclass(frozen=True, slots=True)
class Frame:
    """One recorded message, its exact bytes and what was derived from them.

    ``direction`` is ``"c2a"`` (client to agent) or ``"a2c"``; ``kind`` one of
    ``request``, ``notification``, ``response``, ``error``, ``batch``, ``invalid``; ``id`` the
    JSON-RPC id as its exact JSON text (``1`` and ``"1"`` differ); ``partner`` the seq of the
    request a response answers (or of the response a request got)."""

    seq: int
    direction: str
    t_ms: float
    kind: str
    method: str | None
    id: str | None
    session_id: str | None
    update: str | None
    tool_call_id: str | None
    terminal_id: str | None
    error_code: int | None
    anomalies: tuple[str, ...]
    partner: int | None
    latency_ms: float | None
    raw: bytes

    @property
    def value(self) -> Any:
        """The message parsed as JSON (``None`` when it is not JSON)."""
        try:
            return orjson.loads(self.raw)
        except orjson.JSONDecodeError:
            return None

    @property
    def text(self) -> str:
        """The exact bytes as text (invalid UTF-8 as U+FFFD)."""
        return self.raw.decode("utf-8", "replace")


@dataclass(frozen=True, slots=True)
class Turn:
    """A prompt turn: from ``session/prompt`` to its answer (v1) or idle state (v2)."""

    index: int
    seq: int
    session_id: str | None
    prompt: str
    agent_text: str
    stop_reason: str | None
    error: Any
    cut_short: str | None  # why it was never answered, when it was not
    duration_ms: float | None
    tool_call_ids: tuple[str, ...]
    data: dict[str, Any] = field(repr=False)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call as the user saw it: its last title, kind and status, every status it
    went through, and its content."""

    tool_call_id: str
    title: str | None
    kind: str | None
    status: str | None
    statuses: tuple[str, ...]
    data: dict[str, Any] = field(repr=False)


@dataclass(frozen=True, slots=True)
class Terminal:
    """A terminal: its command, its screen as a terminal would show it, how it ended."""

    terminal_id: str
    command: str | None
    args: tuple[str, ...]
    screen: tuple[str, ...]
    exit_code: int | None
    signal: str | None
    data: dict[str, Any] = field(repr=False)


@dataclass(frozen=True, slots=True)
class FileChange:
    """A change to a file (a tool call's diff, or a write): ``patch`` is a unified diff when
    it is known; ``applies`` the seq of the tool call diff a write carried out."""

    seq: int
    path: str | None
    operation: str
    source: str
    tool_call_id: str | None
    patch: str | None
    stale: bool
    applies: int | None
    data: dict[str, Any] = field(repr=False)


@dataclass(frozen=True, slots=True)
class Session:
    """An ACP session, with the sessions it started (subagents) and the one that started
    it."""

    session_id: str
    parent_session_id: str | None
    children: tuple[str, ...]
    data: dict[str, Any] = field(repr=False)


@dataclass(frozen=True, slots=True)
class StderrLine:
    """A line the agent wrote on stderr: ``text`` with its colours taken out, ``raw`` the
    exact bytes of the line."""

    t_ms: float
    text: str
    raw: bytes


@dataclass(frozen=True, slots=True)
class Event:
    """A process, connection or HTTP event: its kind, its detail, and the line every view
    prints for it (``agent exited 3 after 1.20 s``); ``bad`` when it is bad news."""

    t_ms: float
    kind: str
    detail: dict[str, Any]
    line: str
    bad: bool

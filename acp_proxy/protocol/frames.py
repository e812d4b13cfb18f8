"""Typed records passed between layers (no I/O).

What belongs here: the small immutable values every layer speaks in — the direction of
traffic, the WebSocket opcode of a message, a captured frame as stored. Nothing here does
I/O or parses JSON.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["Direction", "Frame", "Opcode"]


class Direction(enum.Enum):
    """Which way a frame travelled. Values are what the database stores."""

    CLIENT_TO_AGENT = "c2a"
    AGENT_TO_CLIENT = "a2c"

    @property
    def opposite(self) -> Direction:
        if self is Direction.CLIENT_TO_AGENT:
            return Direction.AGENT_TO_CLIENT
        return Direction.CLIENT_TO_AGENT

    @property
    def arrow(self) -> str:
        return "→" if self is Direction.CLIENT_TO_AGENT else "←"

    @property
    def sender(self) -> str:
        return "client" if self is Direction.CLIENT_TO_AGENT else "agent"


class Opcode(enum.Enum):
    """WebSocket message type; stdio frames have none."""

    TEXT = "text"
    BINARY = "binary"


@dataclass(frozen=True, slots=True)
class Frame:
    """One recorded frame: exact bytes plus where and when it crossed the proxy.

    ``raw`` never includes the ``\\n`` terminator of a stdio line; ``terminated`` says whether
    one followed. ``t_ns`` is monotonic nanoseconds. ``seq`` orders frames of a capture across
    both directions in the order the proxy received them.
    """

    seq: int
    direction: Direction
    t_ns: int
    raw: bytes
    terminated: bool = True
    opcode: Opcode | None = None

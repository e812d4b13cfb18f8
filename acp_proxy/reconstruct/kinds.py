"""The names a reconstruction is folded by (pure): its parts, and the kinds of
``session/update`` it tells apart (docs/protocol.md §5).

What belongs here: constants (and :func:`role_of`, which reads one), shared by
:mod:`acp_proxy.reconstruct.updates` (which re-exports the public ones) and the readers
that choose what a fold reads.
"""

from __future__ import annotations

__all__ = [
    "CHUNKS",
    "EVERYTHING",
    "FILES",
    "KNOWN_ELSEWHERE",
    "OUTPUT_UPDATES",
    "SESSIONS",
    "TERMINALS",
    "TERMINAL_KINDS",
    "TOOLS",
    "TOOL_UPDATES",
    "TREE_UPDATES",
    "role_of",
]

TOOLS, TERMINALS, FILES, SESSIONS = "tools", "terminals", "files", "sessions"
"""The parts of a reconstruction: ``sessions`` is sessions, turns and permissions."""
EVERYTHING = frozenset({TOOLS, TERMINALS, FILES, SESSIONS})

TOOL_UPDATES = frozenset({"tool_call", "tool_call_update", "tool_call_content_chunk"})
OUTPUT_UPDATES = frozenset(
    {
        "agent_message_chunk",
        "agent_thought_chunk",
        "agent_message",
        "agent_thought",
        "tool_call",
        "tool_call_update",
        "tool_call_content_chunk",
        "plan",
        "plan_update",
        "terminal_update",
        "terminal_output_chunk",
    }
)
"""Updates that count as the agent's first visible output in a turn."""

TREE_UPDATES = frozenset(
    {"subagent_update", "session_message", "session_message_chunk", "replay_complete"}
)
TERMINAL_KINDS = frozenset({"terminal_update", "terminal_output_chunk"})
CHUNKS = frozenset({"agent_message_chunk", "agent_thought_chunk"})
"""The updates :meth:`~acp_proxy.reconstruct.counting.Counting.chunk_update` folds from their
``params.update`` alone."""
KNOWN_ELSEWHERE = TREE_UPDATES | {"user_message_chunk", "user_message"}

_AGENT_SAYS = frozenset({"agent_message_chunk", "agent_message"})


def role_of(kind: object) -> str:
    """Whose text a message update (a chunk or a v2 upsert) carries in a turn: ``agent``
    for what the agent said, ``thought`` for what it thought."""
    return "agent" if kind in _AGENT_SAYS else "thought"

"""Reconstruct what the user saw from recorded frames (pure folds, no I/O).

What belongs here: folds over :class:`~acp_proxy.protocol.frames.Frame` values that rebuild
tool calls, terminals, files and diffs, permissions, plans, modes, usage and turns, for
ACP v1 and the v2 draft (docs/protocol.md §5–§7), and pure renderings of
that state (JSON views). Nothing here does I/O: callers hand in frames (from a
:class:`~acp_proxy.store.reader.Store` or a ``jsonl`` export) and print what they get back.

::

    r = reconstruct(frames)            # or reconstruct(frames, at=120): the state at seq 120
    r.tool_calls, r.terminals, r.files, r.permissions, r.turns, r.sessions
    views.terminals_json(r)            # the ``acp-proxy terminals --json`` contract
"""

from __future__ import annotations

from acp_proxy.reconstruct.files import Files
from acp_proxy.reconstruct.filestate import FileChange, FileHistory, FileVersion
from acp_proxy.reconstruct.fold import Reconstruction, reconstruct
from acp_proxy.reconstruct.session import Permission, SessionState, Turn
from acp_proxy.reconstruct.terminals import Terminal, TerminalEvent, render_screen
from acp_proxy.reconstruct.tools import ToolCall

__all__ = [
    "FileChange",
    "FileHistory",
    "FileVersion",
    "Files",
    "Permission",
    "Reconstruction",
    "SessionState",
    "Terminal",
    "TerminalEvent",
    "ToolCall",
    "Turn",
    "reconstruct",
    "render_screen",
]

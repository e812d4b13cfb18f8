"""The checks of tool calls, terminals and permission requests (pure, no I/O).

What belongs here: per session, the tool calls and terminals an agent reports and what may
be done with them. v1: a ``tool_call_update`` only for a ``tool_call`` announced, no
``terminal/*`` call on a terminal once released. v2, where updates are patches (omitted
keeps, ``null`` clears): the first update of a tool call carries its ``title`` and of a
terminal its ``command``; agent-owned terminals send base64 data, an absolute ``cwd``, one
update per terminal per batch; ``tool_call/cancel`` and ``terminal/cancel`` only for a target
that advertises ``capabilities.cancel``. Permission requests: a v2 request has a title, and
an answer selects an option that was offered.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from acp_proxy.check.core.context import Context, Request, Session, as_dict
from acp_proxy.protocol.frames import Frame
from acp_proxy.protocol.jsonrpc import Info, Kind

__all__ = ["V1_TERMINAL", "answer", "batch", "call", "update"]

# The v1 client methods on a terminal that exists (terminal/create makes one).
V1_TERMINAL = frozenset(
    {"terminal/output", "terminal/wait_for_exit", "terminal/kill", "terminal/release"}
)
_TERMINAL_UPDATES = ("terminal_update", "terminal_output_chunk")


def call(
    ctx: Context, frame: Frame, s: Session, method: str, params: dict[str, Any], side: str
) -> None:
    """A call about a terminal, a tool call or a permission, on session ``s``."""
    if method in V1_TERMINAL and ctx.version == 1:
        tid = params.get("terminalId")
        if isinstance(tid, str) and tid in s.released:
            ctx.add(
                "v1.terminal-after-release",
                side,
                f"{method} on terminal {tid}, released at frame {s.released[tid]}",
                [s.released[tid]],
            )
        elif isinstance(tid, str) and method == "terminal/release":
            s.released[tid] = frame.seq
    elif ctx.version != 2:
        return
    elif method == "session/request_permission":
        title = params.get("title")
        if not isinstance(title, str) or not title:
            message = "session/request_permission needs a non-empty title in v2"
            ctx.add("v2.permission-title", side, message)
    elif method in ("tool_call/cancel", "terminal/cancel"):
        what, key, known = (
            ("tool call", "toolCallId", s.cancellable_tools)
            if method == "tool_call/cancel"
            else ("terminal", "terminalId", s.cancellable_terminals)
        )
        tid = params.get(key)
        if isinstance(tid, str) and tid not in known:
            ctx.add(
                "v2.cancel-capability", side, f"{what} {tid} did not advertise capabilities.cancel"
            )


def update(ctx: Context, s: Session, kind: str, u: dict[str, Any], side: str) -> None:
    """A ``session/update`` of ``kind`` about a tool call or a terminal."""
    if ctx.version == 1:
        tid = u.get("toolCallId")
        if kind == "tool_call" and isinstance(tid, str):
            s.tool_calls.add(tid)
        elif kind == "tool_call_update" and isinstance(tid, str) and tid not in s.tool_calls:
            ctx.add(
                "v1.unknown-tool-call",
                side,
                f"tool_call_update for {tid}, which no tool_call announced",
            )
    elif kind in ("tool_call_update", "tool_call_content_chunk"):
        tid = u.get("toolCallId")
        if isinstance(tid, str):
            if kind == "tool_call_update":
                if tid not in s.seen_tools and not isinstance(u.get("title"), str):
                    ctx.add(
                        "v2.patch-first-report",
                        side,
                        f"the first update of tool call {tid} has no title",
                    )
                _cancel_marker(s.cancellable_tools, tid, u)
            s.seen_tools.add(tid)
    elif kind in _TERMINAL_UPDATES:
        tid = u.get("terminalId")
        if isinstance(tid, str):
            _terminal_update(ctx, s, tid, kind, u, side)


def _terminal_update(
    ctx: Context, s: Session, tid: str, kind: str, u: dict[str, Any], side: str
) -> None:
    if kind == "terminal_output_chunk":
        if not _base64(u.get("data")):
            ctx.add("v2.terminal", side, f"terminal_output_chunk data of {tid} is not base64")
    else:
        if tid not in s.seen_terminals and not isinstance(u.get("command"), str):
            ctx.add(
                "v2.patch-first-report",
                side,
                f"the first update of terminal {tid} has no command",
            )
        output = u.get("output")
        if isinstance(output, dict) and not _base64(output.get("data")):
            ctx.add("v2.terminal", side, f"the output snapshot of {tid} is not base64")
        cwd = u.get("cwd")
        if isinstance(cwd, str) and not cwd.startswith("/") and not _windows_abs(cwd):
            ctx.add("v2.terminal", side, f"terminal {tid} cwd {cwd!r} is not absolute")
        _cancel_marker(s.cancellable_terminals, tid, u)
    s.seen_terminals.add(tid)


def batch(ctx: Context, side: str, items: list[Info]) -> None:
    """Two updates of one terminal in a batch, whose entries may be applied in any order."""
    terminals: dict[str, int] = {}
    for item in items:
        if (
            item.kind != Kind.INVALID
            and item.method == "session/update"
            and item.update_kind in _TERMINAL_UPDATES
            and item.terminal_id is not None
        ):
            terminals[item.terminal_id] = terminals.get(item.terminal_id, 0) + 1
    for tid, n in terminals.items():
        if n > 1:
            ctx.add(
                "v2.terminal",
                side,
                f"{n} updates of terminal {tid} in one batch (their order is lost)",
            )


def answer(ctx: Context, req: Request, result: dict[str, Any], side: str) -> None:
    """A successful answer to a permission request or (v1) to ``terminal/create``."""
    if req.method == "session/request_permission":
        outcome = as_dict(result.get("outcome"))
        if outcome.get("outcome") != "selected":
            return
        chosen = outcome.get("optionId")
        options = req.params.get("options")
        offered = [as_dict(o).get("optionId") for o in options] if isinstance(options, list) else []
        if chosen not in offered:
            ctx.add(
                "acp.permission-option",
                side,
                f"optionId {chosen!r} was not among the options offered",
                [req.seq],
            )
    elif req.method == "terminal/create" and ctx.version == 1:
        s = ctx.session(req.params.get("sessionId"))
        tid = result.get("terminalId")
        if s is not None and isinstance(tid, str):
            s.released.pop(tid, None)


def _cancel_marker(target: set[str], tid: str, u: dict[str, Any]) -> None:
    """Patch semantics: omitted keeps, null clears, a value replaces."""
    if "capabilities" not in u:
        return
    caps = u["capabilities"]
    if isinstance(caps, dict) and "cancel" not in caps:
        return
    if isinstance(caps, dict) and isinstance(caps.get("cancel"), dict):
        target.add(tid)
    else:
        target.discard(tid)


def _base64(v: Any) -> bool:
    if not isinstance(v, str):
        return False
    try:
        base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _windows_abs(path: str) -> bool:
    return len(path) > 2 and path[1] == ":" and path[2] in "\\/"

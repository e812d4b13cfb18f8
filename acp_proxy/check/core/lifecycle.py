"""The connection's lifecycle: ``initialize`` and the sessions it opens (pure, no I/O).

What belongs here: what ``initialize`` (or the ``proxy/initialize`` a conductor sends a proxy, which
negotiates the same way: docs/protocol.md §13.4) settles in the shared context — the protocol
version (the client's request, then the agent's answer; a version with no bundled schema
turns the schema checks off), both sides' capabilities — and the rules about it: nothing but
``initialize`` and ``$/`` messages before its response, a capture without it. And which
sessions exist: those ``session/new``, ``session/fork`` and ``session/list`` answered with,
and those ``session/load`` and ``session/resume`` name; any other ``sessionId`` is unknown.
"""

from __future__ import annotations

from typing import Any

from acp_proxy.check.core.context import Context, Session, as_dict
from acp_proxy.protocol.envelopes import SUCCESSOR_METHODS, is_initialize
from acp_proxy.protocol.frames import Direction

__all__ = ["answered", "call", "finish", "initialize_result", "session_of_call"]

_SESSION_INTRODUCERS = frozenset({"session/load", "session/resume"})


def call(ctx: Context, method: str, params: dict[str, Any], d: Direction, side: str) -> None:
    """A request or notification: ``initialize`` itself, or one sent before its answer."""
    if is_initialize(method) and d is Direction.CLIENT_TO_AGENT:
        ctx.init_sent = True
        ctx.client_caps = as_dict(params.get("clientCapabilities", params.get("capabilities")))
        v = params.get("protocolVersion")
        if ctx.forced is None and v.__class__ is int and v in (1, 2):
            ctx.version = v
    elif not ctx.init_done and not method.startswith("$/") and method not in SUCCESSOR_METHODS:
        # a proxy forwards initialize to its successor before it answers proxy/initialize
        ctx.add("acp.before-initialize", side, f"{method} before initialize completed")


def initialize_result(ctx: Context, result: dict[str, Any]) -> None:
    """The agent's answer to ``initialize``: the version and its capabilities."""
    ctx.init_done = True
    ctx.agent_caps = as_dict(result.get("agentCapabilities", result.get("capabilities")))
    v = result.get("protocolVersion")
    if ctx.forced is not None or v.__class__ is not int:
        return
    if v in (1, 2):
        ctx.version = v
    else:
        ctx.add(
            "acp.unknown-version",
            "agent",
            f"protocol version {v} has no bundled schema; schema checks are off",
        )
        ctx.no_schema = True


def session_of_call(
    ctx: Context, method: str, params: dict[str, Any], d: Direction, side: str
) -> Session | None:
    """The session a call names (``session/load`` and ``session/resume`` introduce theirs);
    a ``sessionId`` no session has is ``acp.unknown-session``."""
    sid = params.get("sessionId")
    if d is Direction.CLIENT_TO_AGENT and method in _SESSION_INTRODUCERS and isinstance(sid, str):
        ctx.sessions.setdefault(sid, Session())
    s = ctx.session(sid)
    if isinstance(sid, str) and s is None and ctx.init_done and not method.startswith("$/"):
        ctx.add(
            "acp.unknown-session",
            side,
            f"{method} names session {sid}, "
            "which no session/new, load, resume, fork or list produced",
        )
    return s


def answered(ctx: Context, method: str | None, result: dict[str, Any]) -> None:
    """The sessions a successful answer introduces."""
    if method in ("session/new", "session/fork"):
        sid = result.get("sessionId")
        if isinstance(sid, str):
            ctx.sessions.setdefault(sid, Session())
    elif method == "session/list":
        sessions = result.get("sessions")
        for info in sessions if isinstance(sessions, list) else ():
            sid = as_dict(info).get("sessionId")
            if isinstance(sid, str):
                ctx.sessions.setdefault(sid, Session())


def finish(ctx: Context, frames: int) -> None:
    """A capture of ``frames`` frames without ``initialize``."""
    if not ctx.init_sent and frames and ctx.forced is None:
        ctx.at(-1)
        ctx.add("acp.no-initialize", "-", "no initialize: checked as ACP v1")

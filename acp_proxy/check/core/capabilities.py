"""The capability checks: each side uses only what the other advertised (pure, no I/O).

What belongs here: once ``initialize`` has completed, the client methods the agent calls
(``fs/*``, ``terminal/*`` in v1, ``elicitation/create`` by mode) against the client's
capabilities, and the agent methods the client calls (``session/load``, the session
capabilities, ``logout``; ``session/delete`` in v2), the prompt content it sends and the MCP
transports it asks for, against the agent's. Markers are read as each version defines them:
booleans in v1, objects in v2 (:func:`~acp_proxy.check.core.context.marker`).
"""

from __future__ import annotations

from typing import Any

from acp_proxy.check.core.context import Context, as_dict, marker, sender
from acp_proxy.check.core.tools import V1_TERMINAL
from acp_proxy.protocol.frames import Direction

__all__ = ["check_capabilities"]

_PROMPT_CONTENT = {"image": "image", "audio": "audio", "resource": "embeddedContext"}
_SESSION_OPENERS = ("session/new", "session/load", "session/resume", "session/fork")


def check_capabilities(ctx: Context, method: str, params: dict[str, Any], d: Direction) -> None:
    """Did the sender of ``method`` use only what the other side advertised?"""
    side = sender(d)
    if d is Direction.AGENT_TO_CLIENT:
        _client_methods(ctx, method, params, side)
        return
    if ctx.version == 1:
        _agent_methods_v1(ctx, method, side)
        ac = ctx.agent_caps
        prompt_caps = as_dict(ac.get("promptCapabilities"))
        mcp = as_dict(ac.get("mcpCapabilities"))
        mcp_ok = {"http": marker(mcp.get("http")), "sse": marker(mcp.get("sse"))}
        prefix = "agentCapabilities.promptCapabilities"
        mcp_prefix = "agentCapabilities.mcpCapabilities"
    else:
        sess = as_dict(ctx.agent_caps.get("session"))
        if method == "session/delete" and not marker(sess.get("delete")):
            ctx.add("cap.agent-method", side, "session/delete without capabilities.session.delete")
        prompt_caps = as_dict(sess.get("prompt"))
        mcp = as_dict(sess.get("mcp"))
        mcp_ok = {"stdio": marker(mcp.get("stdio")), "http": marker(mcp.get("http"))}
        prefix = "capabilities.session.prompt"
        mcp_prefix = "capabilities.session.mcp"
    if method == "session/prompt":
        prompt = params.get("prompt")
        for block in prompt if isinstance(prompt, list) else ():
            t = as_dict(block).get("type")
            cap = _PROMPT_CONTENT.get(t) if isinstance(t, str) else None
            if cap is not None and not marker(prompt_caps.get(cap)):
                ctx.add("cap.prompt-content", side, f"a {t} block without {prefix}.{cap}")
    if method in _SESSION_OPENERS:
        servers = params.get("mcpServers")
        for server in servers if isinstance(servers, list) else ():
            t = as_dict(server).get("type", "stdio")
            if isinstance(t, str) and t in mcp_ok and not mcp_ok[t]:
                ctx.add(
                    "cap.mcp-transport", side, f"an MCP server of type {t} without {mcp_prefix}.{t}"
                )


def _client_methods(ctx: Context, method: str, params: dict[str, Any], side: str) -> None:
    """Client methods the agent calls: fs and terminal (v1), elicitation."""
    cc = ctx.client_caps
    if ctx.version == 1:
        fs = as_dict(cc.get("fs"))
        need: tuple[str, bool] | None = None
        if method == "fs/read_text_file":
            need = ("clientCapabilities.fs.readTextFile", fs.get("readTextFile") is True)
        elif method == "fs/write_text_file":
            need = ("clientCapabilities.fs.writeTextFile", fs.get("writeTextFile") is True)
        elif method in V1_TERMINAL or method == "terminal/create":
            need = ("clientCapabilities.terminal", cc.get("terminal") is True)
        if need is not None and not need[1]:
            ctx.add("cap.client-method", side, f"{method} without {need[0]}")
    if method == "elicitation/create":
        mode = params.get("mode")
        el = as_dict(cc.get("elicitation"))
        if isinstance(mode, str) and not marker(el.get(mode)):
            ctx.add(
                "cap.client-method",
                side,
                f"elicitation/create in {mode} mode without elicitation.{mode}",
            )


def _agent_methods_v1(ctx: Context, method: str, side: str) -> None:
    """v1 agent methods behind a capability: loadSession, session capabilities, logout."""
    ac = ctx.agent_caps
    sc = as_dict(ac.get("sessionCapabilities"))
    gate: tuple[str, bool] | None = None
    if method == "session/load":
        gate = ("agentCapabilities.loadSession", ac.get("loadSession") is True)
    elif method in ("session/list", "session/resume", "session/close", "session/delete"):
        key = method.split("/")[1]
        gate = (f"agentCapabilities.sessionCapabilities.{key}", marker(sc.get(key)))
    elif method == "logout":
        gate = ("agentCapabilities.auth.logout", marker(as_dict(ac.get("auth")).get("logout")))
    if gate is not None and not gate[1]:
        ctx.add("cap.agent-method", side, f"{method} without {gate[0]}")

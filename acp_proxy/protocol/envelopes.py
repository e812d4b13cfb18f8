"""What a proxy-chain envelope or an MCP-over-ACP message carries (pure, no I/O).

What belongs here: reading the messages that carry other messages, without changing them —

* proxy chains (docs/protocol.md §13.4): the envelope methods of the three generations
  (``proxy/successor``; ``_proxy/successor``; ``_proxy/successor/request`` and
  ``/notification``, with the ``/send/`` and ``/receive/`` forms), whose params are
  ``{method, params, _meta?}``, and which direction each goes: to the proxy's successor or
  from it. Who sent the envelope decides when its name does not: in a capture of one hop
  the conductor is the client side, so an envelope the agent side sends goes to the
  successor. The initialize methods a conductor sends to a proxy (``proxy/initialize``,
  ``_proxy/initialize``, ``initialize/proxy``) negotiate like ``initialize``.
* MCP over ACP (§13.5): ``mcp/message {serverId, requestId, method, params}`` and the older
  ``_mcp/*`` and ``mcp/*`` connection methods, as the MCP request each one carries.

Values come from peers: anything of the wrong type reads as "not an envelope", never as an
exception.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acp_proxy.protocol.frames import Direction

__all__ = [
    "FROM_SUCCESSOR",
    "INITIALIZE_METHODS",
    "MCP_METHODS",
    "PROXY_INITIALIZE",
    "SUCCESSOR_METHODS",
    "TO_SUCCESSOR",
    "McpMessage",
    "Wrapped",
    "is_initialize",
    "mcp_message",
    "unwrap",
]

TO_SUCCESSOR = "to_successor"
FROM_SUCCESSOR = "from_successor"

_BOTH_WAYS = frozenset(
    {
        "proxy/successor",
        "_proxy/successor",
        "_proxy/successor/request",
        "_proxy/successor/notification",
    }
)
_TO = frozenset({"_proxy/successor/send/request", "_proxy/successor/send/notification"})
_FROM = frozenset({"_proxy/successor/receive/request", "_proxy/successor/receive/notification"})
SUCCESSOR_METHODS = _BOTH_WAYS | _TO | _FROM
"""Every envelope method, of every generation."""
PROXY_INITIALIZE = frozenset({"proxy/initialize", "_proxy/initialize", "initialize/proxy"})
INITIALIZE_METHODS = PROXY_INITIALIZE | {"initialize"}
MCP_METHODS = frozenset(
    {
        "mcp/message",
        "mcp/connect",
        "mcp/disconnect",
        "_mcp/message",
        "_mcp/connect",
        "_mcp/disconnect",
    }
)


@dataclass(frozen=True, slots=True)
class Wrapped:
    """The message an envelope carries: its method and params (``None`` when there are
    none), where it goes (:data:`TO_SUCCESSOR` or :data:`FROM_SUCCESSOR`), the envelope's
    own ``_meta`` (the hop's, not the wrapped message's) and which generation it is."""

    method: str
    params: Any
    way: str
    meta: Any
    envelope: str

    @property
    def direction(self) -> Direction:
        """Who sent the wrapped message, as one side of a connection: the proxy (as the
        successor's client) when it goes to the successor, the successor (an agent to the
        proxy) when it comes from it."""
        if self.way == TO_SUCCESSOR:
            return Direction.CLIENT_TO_AGENT
        return Direction.AGENT_TO_CLIENT


def is_initialize(method: Any) -> bool:
    """``initialize``, or an initialize a conductor sends to a proxy."""
    return method in INITIALIZE_METHODS


def unwrap(method: Any, params: Any, sender: Direction) -> Wrapped | None:
    """The message an envelope sent by ``sender`` carries, or ``None`` when ``method`` is no
    envelope or its params do not name a method."""
    if method not in SUCCESSOR_METHODS or not isinstance(params, dict):
        return None
    inner = params.get("method")
    if not isinstance(inner, str):
        return None
    if method in _TO:
        way = TO_SUCCESSOR
    elif method in _FROM:
        way = FROM_SUCCESSOR
    else:  # the agent side of a hop's capture is the proxy: what it wraps goes downstream
        way = TO_SUCCESSOR if sender is Direction.AGENT_TO_CLIENT else FROM_SUCCESSOR
    return Wrapped(inner, params.get("params"), way, params.get("_meta"), method)


@dataclass(frozen=True, slots=True)
class McpMessage:
    """One MCP message carried over ACP. ``server`` is the ``serverId`` (or, in the older
    generations, the ``connectionId``; for a connect, the ACP id it connects to);
    ``request_id`` the inner MCP request id where the carrier names one (else the outer
    JSON-RPC id is it); ``method`` the inner MCP method (``tools/call``…), or ``connect`` and
    ``disconnect`` for the older connection methods."""

    server: str | None
    request_id: str | None
    method: str
    params: Any
    carrier: str


def _text(*values: Any) -> str | None:
    for v in values:
        if isinstance(v, str):
            return v
    return None


def mcp_message(method: Any, params: Any) -> McpMessage | None:
    """The MCP message an ``mcp/*`` or ``_mcp/*`` call carries, or ``None``."""
    if method not in MCP_METHODS:
        return None
    p = params if isinstance(params, dict) else {}
    verb = str(method).rsplit("/", 1)[1]
    server = _text(p.get("serverId"), p.get("connectionId"), p.get("connection_id"))
    if verb == "connect":
        target = _text(p.get("acpId"), p.get("acp_id"), p.get("acpUrl"), p.get("acp_url"))
        return McpMessage(target or server, None, "connect", p, str(method))
    if verb == "disconnect":
        return McpMessage(server, None, "disconnect", p, str(method))
    inner = p.get("method")
    if not isinstance(inner, str):
        return None
    rid = p.get("requestId")
    request_id = rid if isinstance(rid, str) else None
    return McpMessage(server, request_id, inner, p.get("params"), str(method))

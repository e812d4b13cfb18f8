"""MCP calls carried over ACP (pure, no I/O).

What belongs here: :class:`McpCall`, one MCP request carried by ``mcp/message`` (or by the
older ``_mcp/*`` and ``mcp/*`` connection methods; docs/protocol.md §13.5) with its outcome,
and :class:`McpCalls`, which pairs them: the carrier's JSON-RPC response holds the MCP
outcome (``{result}`` or ``{error}`` in the current generation; the inner result itself in
the older ones). A ``connect`` answered with a ``connectionId`` names the server later
messages on that connection talk to. Notifications for an active request (progress) are
counted on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acp_proxy.protocol.envelopes import mcp_message
from acp_proxy.protocol.frames import Direction
from acp_proxy.reconstruct.wire import RpcMessage

__all__ = ["McpCall", "McpCalls"]


@dataclass(slots=True)
class McpCall:
    seq: int
    t_ns: int
    caller: str  # "client" or "agent": who sent the MCP request
    server: str | None
    method: str
    params: Any
    request_id: str | None
    carrier: str
    response_seq: int | None = None
    response_t_ns: int | None = None
    result: Any = None
    error: Any = None
    notifications: int = 0

    @property
    def tool(self) -> Any:
        p = self.params if isinstance(self.params, dict) else {}
        return p.get("name") if self.method == "tools/call" else None

    @property
    def arguments(self) -> Any:
        p = self.params if isinstance(self.params, dict) else {}
        return p.get("arguments") if self.method == "tools/call" else None


class McpCalls:
    """Every MCP call of a capture, in the order they were made."""

    def __init__(self) -> None:
        self.calls: list[McpCall] = []
        self._open: dict[tuple[int, str | None], McpCall] = {}
        self._by_request_id: dict[tuple[str | None, str], McpCall] = {}
        self._servers: dict[str, str] = {}  # older generations: connectionId -> server

    def request(self, m: RpcMessage) -> None:
        carried = mcp_message(m.method, m.params)
        if carried is None:
            return
        server = self._servers.get(carried.server or "", carried.server)
        if m.kind == "notification" and carried.request_id is not None:
            known = self._by_request_id.get((server, carried.request_id))
            if known is not None:
                known.notifications += 1
                return
        caller = "client" if m.direction is Direction.CLIENT_TO_AGENT else "agent"
        call = McpCall(
            m.seq,
            m.t_ns,
            caller,
            server,
            carried.method,
            carried.params,
            carried.request_id,
            carried.carrier,
        )
        self.calls.append(call)
        if m.kind == "request":
            self._open[(m.seq, m.id)] = call
        if carried.request_id is not None:
            self._by_request_id[(server, carried.request_id)] = call

    def response(self, m: RpcMessage) -> None:
        req = m.request
        call = self._open.pop((req.seq, req.id), None) if req is not None else None
        if call is None:
            return
        call.response_seq, call.response_t_ns = m.seq, m.t_ns
        if m.kind == "error":
            call.error = m.body.get("error")
            return
        r = m.result
        if call.method == "connect":
            cid = r.get("connectionId", r.get("connection_id")) if isinstance(r, dict) else None
            if isinstance(cid, str) and call.server is not None:
                self._servers[cid] = call.server
            call.result = r
        elif call.carrier == "mcp/message" and call.request_id is not None and isinstance(r, dict):
            if "result" in r:  # receivers prefer result when both are there
                call.result = r["result"]
            elif "error" in r:
                call.error = r["error"]
        else:
            call.result = r

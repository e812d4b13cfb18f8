"""The JSON of session trees, messages between sessions and MCP calls (pure).

What belongs here: the parts of the view contracts (:mod:`acp_proxy.reconstruct.views`)
that docs/protocol.md §13 added — a child session's subagent record, a session's history
replays, the order that lists each child after its parent, the messages between sessions
and the MCP calls carried over ACP. Keys are only ever added.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acp_proxy.reconstruct.timing import dur as _dur
from acp_proxy.reconstruct.timing import ms as _ms

if TYPE_CHECKING:
    from acp_proxy.reconstruct.fold import Reconstruction

__all__ = [
    "mcp_calls_json",
    "replays_json",
    "session_messages_json",
    "subagent_json",
    "tree_order",
]


def subagent_json(r: Reconstruction, sid: str) -> dict[str, Any] | None:
    sub = r.subagents.get(sid)
    if sub is None:
        return None
    return {
        **sub.fields,
        "_meta": sub.meta,
        "announcedSeq": sub.seq,
        "updates": sub.updates,
        "replayed": sub.replayed,
        "toolCallIds": sub.tool_call_ids,
    }


def replays_json(r: Reconstruction, sid: str) -> list[dict[str, Any]]:
    return [
        {
            "method": x.method,
            "requestSeq": x.request_seq,
            "markerSeqs": x.marker_seqs,
            "responseSeq": x.response_seq,
            "ok": x.ok,
            "updates": x.updates,
            "children": x.children,
            "complete": x.complete,
            "truncated": x.truncated,
        }
        for x in r.replays
        if x.session_id == sid
    ]


def tree_order(r: Reconstruction) -> list[str]:
    """The sessions in arrival order, each child right after its parent's subtree begins."""
    order: list[str] = []
    children: dict[str, list[str]] = {}
    for sid in r.sessions:
        sub = r.subagents.get(sid)
        if sub is not None and sub.parent_id in r.sessions and sub.parent_id != sid:
            children.setdefault(sub.parent_id, []).append(sid)
    placed: set[str] = set()

    def place(sid: str) -> None:
        if sid in placed:
            return
        placed.add(sid)
        order.append(sid)
        for child in children.get(sid, []):
            place(child)

    for sid in r.sessions:
        sub = r.subagents.get(sid)
        if sub is None or sub.parent_id not in r.sessions:
            place(sid)
    for sid in r.sessions:  # a cycle of parents: kept, in arrival order
        place(sid)
    return order


def session_messages_json(r: Reconstruction) -> list[dict[str, Any]]:
    """Messages between sessions (``session_message``/``_chunk``), as each transcript
    showed them, in the order they started."""
    return [
        {
            "sessionId": x.session_id,
            "messageId": x.message_id,
            "senderSessionId": x.sender,
            "recipientSessionId": x.recipient,
            "senderMessageId": x.fields.get("senderMessageId"),
            "recipientMessageId": x.fields.get("recipientMessageId"),
            "content": x.content,
            "text": x.text,
            "_meta": x.meta,
            "seq": x.seq,
            "t_ms": _ms(x.t_ns),
            "lastSeq": x.last_seq,
            "replayed": x.replayed,
        }
        for x in r.session_messages.values()
    ]


def mcp_calls_json(r: Reconstruction) -> list[dict[str, Any]]:
    """MCP requests carried over ACP, with their outcome."""
    return [
        {
            "seq": c.seq,
            "t_ms": _ms(c.t_ns),
            "caller": c.caller,
            "server": c.server,
            "method": c.method,
            "tool": c.tool,
            "arguments": c.arguments,
            "params": c.params,
            "requestId": c.request_id,
            "carrier": c.carrier,
            "responseSeq": c.response_seq,
            "durationMs": _dur(c.t_ns, c.response_t_ns),
            "result": c.result,
            "error": c.error,
            "notifications": c.notifications,
        }
        for c in r.mcp.calls
    ]

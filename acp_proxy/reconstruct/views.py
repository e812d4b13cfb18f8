"""JSON views of a reconstruction: the contracts scripts and tests rely on (pure).

What belongs here: turning the records of :class:`~acp_proxy.reconstruct.fold.Reconstruction`
into plain JSON values, one function per ``acp-proxy`` view. Keys are camelCase like ACP,
except ``output_base64`` (the exact bytes of a terminal). Times are milliseconds since the
start of the capture (``*Ms``/``t_ms``), rounded to microseconds; ``seq`` numbers are the
capture's. ``docs/reconstruct.md`` documents every field; keys are only ever added.
"""

from __future__ import annotations

import base64
from typing import Any

from acp_proxy.reconstruct.filestate import FileChange
from acp_proxy.reconstruct.fold import Reconstruction
from acp_proxy.reconstruct.session import Change, Permission, SessionState, Turn, intervals_ns
from acp_proxy.reconstruct.terminals import Terminal, TerminalEvent
from acp_proxy.reconstruct.timing import dur as _dur
from acp_proxy.reconstruct.timing import ms as _ms
from acp_proxy.reconstruct.tools import ToolCall
from acp_proxy.reconstruct.treeviews import (
    mcp_calls_json,
    replays_json,
    session_messages_json,
    subagent_json,
    tree_order,
)

__all__ = [
    "change_json",
    "diffs_json",
    "files_json",
    "mcp_calls_json",
    "permission_json",
    "permissions_json",
    "reconstruction_json",
    "session_messages_json",
    "sessions_json",
    "terminal_json",
    "terminals_json",
    "tool_json",
    "tools_json",
    "turn_json",
    "turns_json",
]


def tool_json(tc: ToolCall) -> dict[str, Any]:
    ended = tc.ended_t_ns
    return {
        "toolCallId": tc.tool_call_id,
        "sessionId": tc.session_id,
        "title": tc.title,
        "name": tc.name,
        "kind": tc.kind,
        "status": tc.status,
        "statusHistory": [
            {"status": c.status, "seq": c.seq, "t_ms": _ms(c.t_ns)} for c in tc.status_history
        ],
        "content": tc.content,
        "locations": tc.locations,
        "locationHistory": [
            {"path": loc.path, "line": loc.line, "seq": loc.seq, "t_ms": _ms(loc.t_ns)}
            for loc in tc.location_history
        ],
        "rawInput": tc.raw_input,
        "rawOutput": tc.raw_output,
        "capabilities": tc.capabilities,
        "_meta": tc.meta,
        "terminalIds": tc.terminal_ids,
        "sessionIds": tc.session_ids,
        "firstSeq": tc.first_seq,
        "lastSeq": tc.last_seq,
        "startedMs": _ms(tc.first_t_ns),
        "endedMs": _ms(ended),
        "durationMs": _dur(tc.first_t_ns, ended),
        "updates": tc.updates,
        "cancelRequestedSeq": tc.cancel_requested_seq,
        "replayed": tc.replayed,
        "anomalies": tc.anomalies,
    }


def tools_json(r: Reconstruction) -> list[dict[str, Any]]:
    """``acp-proxy tools --json``: tool calls in the order they were first seen."""
    return [tool_json(tc) for tc in r.tool_calls.values()]


def _exit(t: Terminal) -> dict[str, Any] | None:
    if t.exit_status is None:
        return None
    return {"exitCode": t.exit_status.get("exitCode"), "signal": t.exit_status.get("signal")}


_SIZED = frozenset({"chunk", "snapshot", "output"})


def _timeline(events: list[TerminalEvent]) -> list[dict[str, Any]]:
    out = []
    for e in events:  # one per chunk: the bulk of a terminal's JSON, kept to plain steps
        kind = e.kind
        item: dict[str, Any] = {"seq": e.seq, "t_ms": _ms(e.t_ns), "event": kind}
        if kind in _SIZED:
            item["bytes"] = e.size
        if e.detail is not None:
            item["detail"] = e.detail
        out.append(item)
    return out


def terminal_json(t: Terminal) -> dict[str, Any]:
    text = t.text
    return {
        "terminalId": t.terminal_id,
        "sessionId": t.session_id,
        "owner": t.owner,
        "command": t.command,
        "args": t.args,
        "env": t.env,
        "cwd": t.cwd,
        "outputByteLimit": t.output_byte_limit,
        "size": t.size,
        "capabilities": t.capabilities,
        "_meta": t.meta,
        "exitStatus": _exit(t),
        "truncated": t.truncated,
        "killed": t.killed,
        "released": t.released,
        "output_base64": base64.b64encode(bytes(t.output)).decode("ascii"),
        "text": text,
        "screen": t.screen(text),
        "screenNote": t.screen_note,
        "toolCallIds": t.tool_call_ids,
        "firstSeq": t.first_seq,
        "startedMs": _ms(t.first_t_ns),
        "replayed": t.replayed,
        "timeline": _timeline(t.events),
        "anomalies": t.anomalies,
    }


def terminals_json(r: Reconstruction) -> list[dict[str, Any]]:
    """``acp-proxy terminals --json``: terminals in the order they were first seen."""
    return [terminal_json(t) for t in r.terminals.values()]


def change_json(c: FileChange) -> dict[str, Any]:
    return {
        "path": c.path,
        "operation": c.operation,
        "oldPath": c.old_path,
        "toolCallId": c.tool_call_id,
        "sessionId": c.session_id,
        "seq": c.seq,
        "t_ms": _ms(c.t_ns),
        "fileType": c.file_type,
        "mimeType": c.mime_type,
        "patch": c.patch,
        "source": c.source,
        "stale": c.stale,
        "ok": c.ok,
        "applies": c.applies,
        "oldText": c.old_text,
        "newText": c.new_text,
        "_meta": c.meta,
    }


def diffs_json(r: Reconstruction) -> list[dict[str, Any]]:
    """``acp-proxy diffs --json``: every file change in arrival order."""
    return [change_json(c) for c in r.files.changes]


def files_json(r: Reconstruction) -> list[dict[str, Any]]:
    """Per path: the starting state, the last known state and the timeline of versions."""
    return [
        {
            "path": h.path,
            "startExists": h.start_exists,
            "startContent": h.start_content,
            "exists": h.exists,
            "content": h.content,
            "versions": [
                {
                    "seq": v.seq,
                    "t_ms": _ms(v.t_ns),
                    "operation": v.operation,
                    "source": v.source,
                    "sessionId": v.session_id,
                    "toolCallId": v.tool_call_id,
                    "exists": v.exists,
                    "contentKnown": v.content is not None,
                    "partial": v.partial,
                    "stale": v.stale,
                    "diverged": v.diverged,
                }
                for v in h.versions
            ],
        }
        for h in r.files.paths.values()
    ]


def permission_json(p: Permission) -> dict[str, Any]:
    return {
        "sessionId": p.session_id,
        "requestId": p.request_id,
        "seq": p.seq,
        "t_ms": _ms(p.t_ns),
        "title": p.title,
        "description": p.description,
        "toolCallId": p.tool_call_id,
        "subject": p.subject,
        "toolCall": p.tool_call,
        "options": p.options,
        "outcome": p.outcome,
        "optionId": p.option_id,
        "optionKind": p.option_kind,
        "approved": p.approved,
        "answeredSeq": p.answered_seq,
        "waitMs": _ms(p.wait_ns),
        "error": p.error,
        "cancelRequestedSeq": p.cancel_requested_seq,
        "_meta": p.meta,
    }


def permissions_json(r: Reconstruction) -> list[dict[str, Any]]:
    return [permission_json(p) for p in r.permissions]


def turn_json(r: Reconstruction, turn: Turn) -> dict[str, Any]:
    end = turn.ended_t_ns
    horizon = end if end is not None else None
    spans = []
    for tcid in turn.tool_call_ids:
        tc = r.tool_calls.get((turn.session_id or "", tcid))
        if tc is None:
            continue
        stop = tc.ended_t_ns if tc.ended_t_ns is not None else (horizon or tc.last_t_ns)
        spans.append((tc.first_t_ns, max(stop, tc.first_t_ns)))
    waits = [p.wait_ns for p in turn.permissions if p.wait_ns is not None]
    return {
        "index": turn.index,
        "sessionId": turn.session_id,
        "requestId": turn.request_id,
        "seq": turn.seq,
        "t_ms": _ms(turn.t_ns),
        "prompt": turn.prompt_text,
        "endedSeq": turn.ended_seq,
        "endedMs": _ms(end),
        "stopReason": turn.stop_reason,
        "error": turn.error,
        "messageId": turn.message_id,
        "durationMs": _dur(turn.t_ns, end),
        "timeToFirstOutputMs": _dur(turn.t_ns, turn.first_output_t_ns),
        "toolTimeMs": round(intervals_ns(spans) / 1e6, 3),
        "permissionWaitMs": round(sum(waits) / 1e6, 3),
        "cancelled": turn.cancel_seq is not None or turn.stop_reason == "cancelled",
        "cancelSeq": turn.cancel_seq,
        "cancelToStopMs": _dur(turn.cancel_t_ns, end if turn.cancel_t_ns is not None else None),
        "toolCallIds": turn.tool_call_ids,
        "permissionSeqs": [p.seq for p in turn.permissions],
        "updates": turn.updates,
        "agentText": turn.text("agent"),
        "thoughtText": turn.text("thought"),
        "idempotencyKey": turn.idempotency_key,
        "retries": [
            {
                "seq": x.seq,
                "t_ms": _ms(x.t_ns),
                "requestId": x.request_id,
                "responseSeq": x.response_seq,
                "messageId": x.message_id,
                "error": x.error,
            }
            for x in turn.retries
        ],
    }


def turns_json(r: Reconstruction) -> list[dict[str, Any]]:
    return [turn_json(r, t) for t in r.turns]


def _changes(items: list[Change]) -> list[dict[str, Any]]:
    return [
        {"seq": c.seq, "t_ms": _ms(c.t_ns), "source": c.source, "value": c.value} for c in items
    ]


def session_json(s: SessionState, r: Reconstruction | None = None) -> dict[str, Any]:
    sid = s.session_id
    sub = r.subagents.get(sid) if r is not None else None
    tree: dict[str, Any] = {
        "parentSessionId": sub.parent_id if sub is not None else None,
        "children": [c for c, x in r.subagents.items() if x.parent_id == sid] if r else [],
        "subagent": subagent_json(r, sid) if r is not None else None,
        "history": s.history,
        "replays": replays_json(r, sid) if r is not None else [],
    }
    return {
        "sessionId": s.session_id,
        "cwd": s.cwd,
        "title": s.title,
        "mode": s.mode,
        "modes": s.modes,
        "modeHistory": _changes(s.mode_history),
        "configOptions": s.config_options,
        "configHistory": _changes(s.config_history),
        "plan": s.plan,
        "plans": s.plans,
        "planHistory": _changes(s.plan_history),
        "usage": s.usage,
        "usageHistory": _changes(s.usage_history),
        "state": s.state,
        "stateHistory": _changes(s.state_history),
        "availableCommands": s.commands,
        "notices": _changes(s.notices),
        "unknownUpdates": s.unknown_updates,
        **tree,
    }


def sessions_json(r: Reconstruction) -> list[dict[str, Any]]:
    """Every session; a child session (a subagent) right after its parent, so a listing
    reads as a tree (docs/protocol.md §13.1)."""
    return [session_json(r.sessions[sid], r) for sid in tree_order(r)]


def reconstruction_json(r: Reconstruction) -> dict[str, Any]:
    """Everything, as one value (the golden files in ``recordings/expected/``)."""
    return {
        "protocolVersion": r.protocol_version,
        "frames": r.frames,
        "lastSeq": r.last_seq,
        "sessions": sessions_json(r),
        "turns": turns_json(r),
        "toolCalls": tools_json(r),
        "permissions": permissions_json(r),
        "terminals": terminals_json(r),
        "diffs": diffs_json(r),
        "files": files_json(r),
        "sessionMessages": session_messages_json(r),
        "mcpCalls": mcp_calls_json(r),
    }

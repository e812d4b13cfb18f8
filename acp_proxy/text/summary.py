"""Readable text for people: a few words on what one frame says.

What belongs here: the summary of a frame's content (a request's parameters, a result, an
error, a batch) for a timeline line or a listing, and shortening text to fit. It reads the
raw bytes and never decides anything: the timeline shows anomalies beside it.
"""

from __future__ import annotations

from typing import Any

import orjson

from acp_proxy.protocol.envelopes import TO_SUCCESSOR, mcp_message, unwrap
from acp_proxy.protocol.jsonrpc import decode
from acp_proxy.store.reader import StoredFrame

__all__ = ["short", "summary"]


def short(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def summary(f: StoredFrame) -> str:
    """A few words on what the frame says."""
    if f.kind == "invalid":
        return short(repr(f.raw[:80])[2:-1], 50)
    v = decode(f.raw)
    if f.kind == "batch" and isinstance(v, list):
        methods = [m.get("method", "response") for m in v if isinstance(m, dict)]
        return f"{len(v)} entries: " + short(", ".join(methods), 50)
    if not isinstance(v, dict):
        return ""
    if f.kind == "error":
        e = v.get("error")
        if isinstance(e, dict):
            return short(f"{e.get('code')} {e.get('message', '')}")
        return ""
    if f.kind == "response":
        return _result_summary(v.get("result"))
    params = v.get("params")
    p = params if isinstance(params, dict) else {}
    wrapped = unwrap(f.method, p, f.direction)
    if wrapped is not None:  # a proxy-chain envelope: what it carries, and which way
        inner = p.get("params")
        way = "to successor:" if wrapped.way == TO_SUCCESSOR else "from successor:"
        said = _params_summary(wrapped.method, inner if isinstance(inner, dict) else {})
        return f"{way} {wrapped.method} {said}".rstrip()
    mcp = mcp_message(f.method, p)
    if mcp is not None:  # MCP over ACP: the MCP call inside
        return _mcp_summary(mcp.server, mcp.method, mcp.params)
    return _params_summary(f.method or "", p)


def _mcp_summary(server: str | None, method: str, params: Any) -> str:
    p = params if isinstance(params, dict) else {}
    what = f"mcp {server or '?'} {method}"
    if method == "tools/call":
        args = orjson.dumps(p.get("arguments")).decode() if "arguments" in p else ""
        return short(f"{what} {p.get('name')} {args}".rstrip(), 70)
    return what


def _result_summary(r: Any) -> str:
    if not isinstance(r, dict):
        return short(orjson.dumps(r).decode(), 40) if r is not None else ""
    for key in ("stopReason", "sessionId", "terminalId", "messageId"):
        if key in r:
            return f"{key}={r[key]}"
    if "outcome" in r and isinstance(r["outcome"], dict):
        o = r["outcome"]
        return f"outcome={o.get('outcome')}" + (f" {o['optionId']}" if "optionId" in o else "")
    if "protocolVersion" in r:
        info = r.get("agentInfo") or r.get("info") or {}
        name = info.get("name", "") if isinstance(info, dict) else ""
        return f"protocolVersion={r['protocolVersion']} {name}".rstrip()
    if "content" in r and isinstance(r["content"], str):
        return f"{len(r['content'])} chars"
    if "output" in r and isinstance(r["output"], str):
        return f"output {len(r['output'])} chars" + (" truncated" if r.get("truncated") else "")
    if "exitCode" in r or "signal" in r:
        return f"exitCode={r.get('exitCode')} signal={r.get('signal')}"
    keys = [k for k in r if k != "_meta"]
    return "{" + ", ".join(keys[:5]) + "}" if keys else "{}"


def _text_of(content: Any) -> str:
    if isinstance(content, dict):
        if content.get("type") == "text":
            return str(content.get("text", ""))
        return f"<{content.get('type')}>"
    if isinstance(content, list):
        return " ".join(_text_of(c) for c in content)
    return ""


def _params_summary(method: str, p: dict[str, Any]) -> str:
    if method == "session/update":
        u = p.get("update")
        if not isinstance(u, dict):
            return ""
        kind = u.get("sessionUpdate")
        if kind in ("agent_message_chunk", "agent_thought_chunk", "user_message_chunk"):
            return repr(short(_text_of(u.get("content")), 56))
        if kind in ("tool_call", "tool_call_update"):
            bits = [str(u.get("toolCallId", ""))]
            for key in ("title", "kind", "status"):
                if u.get(key) is not None:
                    bits.append(f"{key}={u[key]}" if key != "title" else repr(u[key]))
            if isinstance(u.get("content"), list):
                bits.append(
                    "content="
                    + ",".join(str(c.get("type")) for c in u["content"] if isinstance(c, dict))
                )
            return short(" ".join(bits))
        if kind == "plan":
            entries = u.get("entries") or []
            return f"{len(entries)} entries"
        if kind == "state_update":
            return short(f"{u.get('state')} {u.get('stopReason') or ''}")
        if kind in ("terminal_update", "terminal_output_chunk"):
            return str(u.get("terminalId", ""))
        return ""
    if method == "initialize":
        info = p.get("clientInfo") or p.get("info") or {}
        name = info.get("name", "") if isinstance(info, dict) else ""
        return f"protocolVersion={p.get('protocolVersion')} {name}".rstrip()
    if method == "session/prompt":
        return repr(short(_text_of(p.get("prompt")), 56))
    if method == "session/new":
        return str(p.get("cwd", ""))
    if method == "session/request_permission":
        tc = p.get("toolCall") if isinstance(p.get("toolCall"), dict) else {}
        title = p.get("title") or (tc or {}).get("title") or (tc or {}).get("toolCallId", "")
        opts = [o.get("optionId") for o in p.get("options", []) if isinstance(o, dict)]
        return short(f"{title!r} options={','.join(map(str, opts))}")
    if method.startswith("fs/"):
        return str(p.get("path", ""))
    if method == "terminal/create":
        return short(" ".join([str(p.get("command", "")), *map(str, p.get("args", []) or [])]))
    if method.startswith("terminal/"):
        return str(p.get("terminalId", ""))
    if method == "$/cancel_request":
        return f"requestId={p.get('requestId')}"
    keys = [k for k in p if k != "_meta"]
    return short(", ".join(keys[:5]))

"""Readable text for people: capture listings and timelines.

What belongs here: turning stored frames and captures into short lines — time, direction
arrow, kind, method or update kind, a summary, and request↔response latency. The raw bytes
stay authoritative; a summary never hides that a frame is odd (anomalies are shown).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from fnmatch import fnmatchcase
from typing import Any

import orjson

from acp_proxy.protocol.jsonrpc import decode
from acp_proxy.store.liveness import capture_state
from acp_proxy.store.reader import StoredFrame

__all__ = [
    "FrameFilter",
    "capture_header",
    "capture_row",
    "event_line",
    "frame_line",
    "summary",
]

_WIDTH = 72


@dataclass(frozen=True, slots=True)
class FrameFilter:
    """Which frames a listing shows; every criterion given must hold."""

    method: str | None = None
    kind: str | None = None
    session: str | None = None
    direction: str | None = None
    update: str | None = None
    anomalous: bool = False

    def __call__(self, f: StoredFrame) -> bool:
        if self.method is not None and not fnmatchcase(f.method or "", self.method):
            return False
        if self.kind is not None and f.kind != self.kind:
            return False
        if self.session is not None and f.session_id != self.session:
            return False
        if self.direction is not None and f.direction.value != self.direction:
            return False
        if self.update is not None and not fnmatchcase(f.update_kind or "", self.update):
            return False
        return not (self.anomalous and not f.anomalies)


def _short(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _duration(c: dict[str, Any]) -> str:
    if c.get("ended_ns") is None:
        return "running" if capture_state(c) == "recording" else "-"
    return f"{c['ended_ns'] / 1e9:.2f}s"


def _name(info: str | None) -> str | None:
    if not info:
        return None
    try:
        v = orjson.loads(info)
    except orjson.JSONDecodeError:
        return None
    if isinstance(v, dict):
        name = v.get("name")
        version = v.get("version")
        return f"{name} {version}" if version else str(name)
    return None


def _command(c: dict[str, Any]) -> str:
    if c.get("agent_command"):
        try:
            return " ".join(orjson.loads(c["agent_command"]))
        except (orjson.JSONDecodeError, TypeError):
            return str(c["agent_command"])
    return c.get("upstream_url") or ""


def _status(c: dict[str, Any]) -> str:
    state = capture_state(c)
    if c.get("exit_signal"):
        status = f"signal {c['exit_signal']}"
    elif c.get("exit_code") is not None:
        status = f"exit {c['exit_code']}"
    elif state == "recording":
        return "running"
    elif state == "killed" or c.get("end_reason") == "proxy_gone":
        status = "killed"
    else:
        status = "closed"
    if state == "finishing":
        status += ", finishing"
    if c.get("lost_count") or c.get("lost_bytes"):
        status += ", incomplete"
    return status


def capture_row(c: dict[str, Any]) -> dict[str, Any]:
    """A capture as the listing shows it (also its ``--json`` form)."""
    return {
        "id": c["id"],
        "uid": c["uid"],
        "started_at": c["started_at"],
        "duration_s": None if c.get("ended_ns") is None else round(c["ended_ns"] / 1e9, 3),
        "transport": c["transport"],
        "agent_command": _command(c),
        "client": _name(c.get("client_info")),
        "agent": _name(c.get("agent_info")),
        "protocol_version": c.get("protocol_version"),
        "messages": c.get("message_count", 0),
        "status": _status(c),
        "exit_code": c.get("exit_code"),
        "exit_signal": c.get("exit_signal"),
        "label": c.get("label"),
    }


def capture_header(c: dict[str, Any]) -> list[str]:
    started = c["started_at"].replace("T", " ").rstrip("Z")
    lines = [
        f"capture {c['id']}  {c['transport']}  {_command(c)}",
        f"  started {started} UTC, {_duration(c)}, {c.get('message_count', 0)} frames, "
        f"{_status(c)}" + (f", label {c['label']!r}" if c.get("label") else ""),
    ]
    client, agent = _name(c.get("client_info")), _name(c.get("agent_info"))
    if client or agent or c.get("protocol_version"):
        v = c.get("protocol_version")
        lines.append(
            f"  client {client or '?'} ⇄ agent {agent or '?'}"
            + (f", ACP protocol v{v}" if v is not None else "")
        )
    return lines


def event_line(ev: dict[str, Any]) -> str:
    """A lifecycle or connection event, in the timeline between frames."""
    detail = ev.get("detail") or ""
    return f"{ev['t_ns'] / 1e6:>10.3f}ms        · {ev['kind']:<12} {_short(detail, 90)}".rstrip()


def frame_line(f: StoredFrame, started_at: str | None = None) -> str:
    t = f.frame.t_ns / 1e6
    when = f"{t:>10.3f}ms"
    if started_at:
        when = _wall(started_at, f.frame.t_ns)
    arrow = f.direction.arrow
    label = f.update_kind if f.update_kind else (f.method or "")
    ident = f"[{f.msg_id}]" if f.msg_id is not None else ""
    text = summary(f)
    extra = ""
    if f.latency_ns is not None:
        extra = f"  ({f.latency_ns / 1e6:.2f} ms, #{f.request_seq})"
    odd = f"  !{','.join(f.anomalies)}" if f.anomalies else ""
    kind = f.kind if f.opcode_text is None else f"{f.kind}/{f.opcode_text}"
    head = f"{when} #{f.seq:<5} {arrow} {kind:<12} {label} {ident}".rstrip()
    return f"{head}  {text}{extra}{odd}".rstrip()


def _wall(started_at: str, t_ns: int) -> str:
    try:
        base = datetime.fromisoformat(started_at.replace("Z", "+00:00"))
    except ValueError:
        return f"{t_ns / 1e6:>10.3f}ms"
    ts = base.timestamp() + t_ns / 1e9
    return datetime.fromtimestamp(ts).strftime("%H:%M:%S.%f")[:-3]


def summary(f: StoredFrame) -> str:
    """A few words on what the frame says."""
    if f.kind == "invalid":
        return _short(repr(f.raw[:80])[2:-1], 50)
    v = decode(f.raw)
    if f.kind == "batch" and isinstance(v, list):
        methods = [m.get("method", "response") for m in v if isinstance(m, dict)]
        return f"{len(v)} entries: " + _short(", ".join(methods), 50)
    if not isinstance(v, dict):
        return ""
    if f.kind == "error":
        e = v.get("error")
        if isinstance(e, dict):
            return _short(f"{e.get('code')} {e.get('message', '')}")
        return ""
    if f.kind == "response":
        return _result_summary(v.get("result"))
    params = v.get("params")
    return _params_summary(f.method or "", params if isinstance(params, dict) else {})


def _result_summary(r: Any) -> str:
    if not isinstance(r, dict):
        return _short(orjson.dumps(r).decode(), 40) if r is not None else ""
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
            return repr(_short(_text_of(u.get("content")), 56))
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
            return _short(" ".join(bits))
        if kind == "plan":
            entries = u.get("entries") or []
            return f"{len(entries)} entries"
        if kind == "state_update":
            return _short(f"{u.get('state')} {u.get('stopReason') or ''}")
        if kind in ("terminal_update", "terminal_output_chunk"):
            return str(u.get("terminalId", ""))
        return ""
    if method == "initialize":
        info = p.get("clientInfo") or p.get("info") or {}
        name = info.get("name", "") if isinstance(info, dict) else ""
        return f"protocolVersion={p.get('protocolVersion')} {name}".rstrip()
    if method == "session/prompt":
        return repr(_short(_text_of(p.get("prompt")), 56))
    if method == "session/new":
        return str(p.get("cwd", ""))
    if method == "session/request_permission":
        tc = p.get("toolCall") if isinstance(p.get("toolCall"), dict) else {}
        title = p.get("title") or (tc or {}).get("title") or (tc or {}).get("toolCallId", "")
        opts = [o.get("optionId") for o in p.get("options", []) if isinstance(o, dict)]
        return _short(f"{title!r} options={','.join(map(str, opts))}")
    if method.startswith("fs/"):
        return str(p.get("path", ""))
    if method == "terminal/create":
        return _short(" ".join([str(p.get("command", "")), *map(str, p.get("args", []) or [])]))
    if method.startswith("terminal/"):
        return str(p.get("terminalId", ""))
    if method == "$/cancel_request":
        return f"requestId={p.get('requestId')}"
    keys = [k for k in p if k != "_meta"]
    return _short(", ".join(keys[:5]))


def lines_for(frames: Iterable[StoredFrame], started_at: str | None = None) -> Iterable[str]:
    for f in frames:
        yield frame_line(f, started_at)

"""Recorded frames to span descriptions (pure, no I/O).

What belongs here: :class:`TraceFold`, the reconstruction (:mod:`acp_proxy.reconstruct`:
turns, tool calls, permissions, terminals, v1 and v2 rules) plus what a trace needs that
the views do not keep — every request with its answer (for fs, terminal and other JSON-RPC
spans and their errors), token usage reported with the end of a turn, and W3C trace
context found in ``_meta``; and :func:`spans`, which turns the fold into
:class:`~acp_proxy.otel.model.SpanData` values: one trace per ACP session, a root span for
the connection, a span per prompt turn, tool call, permission wait, terminal and request.
``docs/otel.md`` lists every span and attribute.
"""

from __future__ import annotations

import bisect
import contextlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from acp_proxy.otel.model import (
    MAX_CONTENT,
    AttrValue,
    Event,
    Link,
    SpanData,
    attr,
    parse_traceparent,
    resource_attributes,
    span_id,
    trace_id,
)
from acp_proxy.protocol.frames import Direction, Frame
from acp_proxy.reconstruct.fold import Reconstruction
from acp_proxy.reconstruct.session import Permission, Turn
from acp_proxy.reconstruct.terminals import Terminal
from acp_proxy.reconstruct.tools import ToolCall
from acp_proxy.reconstruct.wire import Message

__all__ = ["CaptureInfo", "TraceFold", "capture_info", "resource", "spans"]

_C2A = Direction.CLIENT_TO_AGENT
_SETUP = ("session/new", "session/fork", "session/load", "session/resume")
_OWN_SPANS = ("session/prompt", "session/request_permission")
_NAME_MAX = 96


@dataclass(slots=True)
class CaptureInfo:
    """What a trace needs of a capture besides its frames. ``started_unix_ns`` is the wall
    clock of ``t_ns = 0``; ``ended_ns`` is relative like ``t_ns`` (``None``: not ended)."""

    uid: str
    started_unix_ns: int
    transport: str | None = None
    agent_command: list[str] | None = None
    proxy_version: str | None = None
    ended_ns: int | None = None


def _unix_ns(iso: Any) -> int:
    if isinstance(iso, str):
        with contextlib.suppress(ValueError):
            return int(datetime.fromisoformat(iso).timestamp() * 1e6) * 1000
    return 0


def capture_info(row: dict[str, Any]) -> CaptureInfo:
    """From a ``captures`` row (or the recorder's capture metadata)."""
    command = row.get("agent_command")
    if isinstance(command, str):
        with contextlib.suppress(orjson.JSONDecodeError):
            command = orjson.loads(command)
    argv = [str(a) for a in command] if isinstance(command, list) else None
    ended = row.get("ended_ns")
    return CaptureInfo(
        uid=str(row.get("uid") or ""),
        started_unix_ns=_unix_ns(row.get("started_at")),
        transport=row.get("transport") if isinstance(row.get("transport"), str) else None,
        agent_command=argv,
        proxy_version=row.get("proxy_version")
        if isinstance(row.get("proxy_version"), str)
        else None,
        ended_ns=ended if isinstance(ended, int) else None,
    )


@dataclass(slots=True)
class Call:
    """One JSON-RPC request and its answer, with the few fields spans show."""

    seq: int
    t_ns: int
    direction: Direction
    method: str
    id: str | None
    session_id: str | None
    path: str | None = None
    size: int | None = None
    terminal_id: str | None = None
    end_seq: int | None = None
    end_t_ns: int | None = None
    error: dict[str, Any] | None = None


@dataclass(slots=True)
class Context:
    trace_id: bytes
    parent_id: bytes
    trace_state: str | None


def _context(params: dict[str, Any]) -> Context | None:
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        return None
    parsed = parse_traceparent(meta.get("traceparent"))
    if parsed is None:
        return None
    state = meta.get("tracestate")
    return Context(parsed[0], parsed[1], state[:512] if isinstance(state, str) else None)


def _len(text: Any) -> int | None:
    return len(text.encode("utf-8", "surrogatepass")) if isinstance(text, str) else None


class TraceFold(Reconstruction):
    """The reconstruction, plus requests with their answers, usage reported at the end of
    a turn, and the trace context the client sent."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[Call] = []
        self._calls: dict[tuple[int, str | None], Call] = {}
        self.usage_at: dict[int, dict[str, Any]] = {}
        self.connection_context: Context | None = None
        self.contexts: dict[str, Context] = {}
        self.turn_contexts: dict[int, Context] = {}
        self._setup_contexts: dict[tuple[int, str | None], Context] = {}
        self.last_t_ns = 0

    def feed(self, frame: Frame) -> None:
        self.last_t_ns = max(self.last_t_ns, frame.t_ns)
        super().feed(frame)

    def _request(self, m: Message) -> None:
        super()._request(m)
        method = m.method or ""
        p = m.params
        if method == "session/update":
            u = p.get("update")
            if isinstance(u, dict) and isinstance(u.get("usage"), dict):
                self.usage_at[m.seq] = u["usage"]
            return
        ctx = _context(p) if m.direction is _C2A else None
        sid = p.get("sessionId") if isinstance(p.get("sessionId"), str) else None
        if ctx is not None:
            if method == "initialize" and self.connection_context is None:
                self.connection_context = ctx
            elif method in ("session/new", "session/fork"):
                self._setup_contexts[(m.seq, m.id)] = ctx
            elif method == "session/prompt":
                self.turn_contexts[m.seq] = ctx
                first = not any(t.session_id == sid for t in self.turns[:-1])
                if sid is not None and first:
                    self.contexts.setdefault(sid, ctx)
            elif method in _SETUP and sid is not None:
                self.contexts.setdefault(sid, ctx)
        if m.kind != "request":
            return
        call = Call(m.seq, m.t_ns, m.direction, method, m.id, m.session_id)
        if method.startswith("fs/"):
            path = p.get("path")
            call.path = path if isinstance(path, str) else None
            call.size = _len(p.get("content"))
        tid = p.get("terminalId")
        call.terminal_id = tid if isinstance(tid, str) else None
        self.calls.append(call)
        self._calls[(m.seq, m.id)] = call

    def _response(self, m: Message) -> None:
        super()._response(m)
        req = m.request
        if req is None:
            return
        call = self._calls.pop((req.seq, req.id), None)
        r = m.result if isinstance(m.result, dict) else {}
        ctx = self._setup_contexts.pop((req.seq, req.id), None)
        if ctx is not None and isinstance(r.get("sessionId"), str):
            self.contexts.setdefault(r["sessionId"], ctx)
        if req.method == "session/prompt" and isinstance(r.get("usage"), dict):
            self.usage_at[m.seq] = r["usage"]
        if call is None:
            return
        call.end_seq, call.end_t_ns = m.seq, m.t_ns
        if m.kind == "error":
            e = m.body.get("error")
            call.error = e if isinstance(e, dict) else {"message": str(e)}
        elif call.method == "fs/read_text_file":
            call.size = _len(r.get("content"))
        elif call.method == "terminal/create" and isinstance(r.get("terminalId"), str):
            call.terminal_id = r["terminalId"]
        if call.session_id is None and isinstance(r.get("sessionId"), str):
            call.session_id = r["sessionId"]


# -- spans ------------------------------------------------------------------------------


def _name(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _NAME_MAX else text[: _NAME_MAX - 1] + "…"


def _put(attrs: dict[str, AttrValue], key: str, value: Any, limit: int | None = None) -> None:
    v = attr(value) if limit is None else attr(value, limit)
    if v is not None:
        attrs[key] = v


def _json(value: Any) -> str:
    return orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS).decode(
        "utf-8", "replace"
    )


def _request_id(token: str | None) -> str | None:
    """The id as a reader writes it: a string id without its quotes, a number as is."""
    if token is None:
        return None
    if token.startswith('"'):
        with contextlib.suppress(orjson.JSONDecodeError):
            value = orjson.loads(token)
            if isinstance(value, str):
                return value
    return token


def _info(value: Any) -> tuple[Any, Any]:
    if isinstance(value, dict):
        return value.get("name"), value.get("version")
    return None, None


def _error(span: SpanData, error: Any, t_ns: int) -> None:
    e = error if isinstance(error, dict) else {"message": error}
    code, message = e.get("code"), e.get("message")
    span.status = "error"
    span.status_message = attr(message) if isinstance(message, str) else f"error {code}"  # type: ignore[assignment]
    _put(span.attributes, "rpc.jsonrpc.error_code", code)
    _put(span.attributes, "rpc.jsonrpc.error_message", message)
    ev: dict[str, AttrValue] = {"exception.type": f"jsonrpc.error.{attr(code)}"}
    _put(ev, "exception.message", message)
    span.events.append(Event("exception", t_ns, ev))


@dataclass(slots=True)
class _Trace:
    session_id: str
    trace_id: bytes
    root_id: bytes
    root_parent: bytes | None
    trace_state: str | None
    turns: list[Turn] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)  # each turn's seq, ascending
    tool_turn: dict[str, Turn] = field(default_factory=dict)


class _Builder:
    def __init__(
        self, info: CaptureInfo, r: TraceFold, content: bool, only: set[str] | None
    ) -> None:
        self.info = info
        self.r = r
        self.content = content
        self.only = only
        self.out: list[SpanData] = []
        self.end_rel = info.ended_ns if info.ended_ns is not None else r.last_t_ns
        name, version = _info(r.agent_info)
        self.agent_name = attr(name) if isinstance(name, str) else None
        self.agent_version = version
        self.traces: dict[str, _Trace] = {}
        # span id, group and group end of every turn; span id, group, parent, group end of
        # every tool call: known before any span is made, so only the spans asked for are
        self.turn_info: dict[int, tuple[bytes, str, int]] = {}
        self.tool_info: dict[tuple[str, str], tuple[bytes, str, bytes, int]] = {}
        self.calls_by_seq = {c.seq: c for c in r.calls}

    def want(self, group: str) -> bool:
        return self.only is None or group in self.only

    def unix(self, t_ns: int) -> int:
        return self.info.started_unix_ns + t_ns

    def trace(self, sid: str) -> _Trace:
        t = self.traces.get(sid)
        if t is not None:
            return t
        ctx = self.r.contexts.get(sid) or self.r.connection_context
        tid = ctx.trace_id if ctx is not None else trace_id(self.info.uid, sid)
        t = _Trace(
            sid,
            tid,
            span_id(self.info.uid, sid, "root"),
            ctx.parent_id if ctx is not None else None,
            ctx.trace_state if ctx is not None else None,
        )
        self.traces[sid] = t
        return t

    def span(
        self, t: _Trace, key: str, name: str, parent: bytes | None, start: int, end: int
    ) -> SpanData:
        s = SpanData(
            name=_name(name),
            trace_id=t.trace_id,
            span_id=span_id(self.info.uid, t.session_id, key),
            parent_id=parent,
            start_ns=self.unix(start),
            end_ns=self.unix(max(start, end)),
            trace_state=t.trace_state,
        )
        if t.session_id:
            s.attributes["gen_ai.conversation.id"] = attr(t.session_id)  # type: ignore[assignment]
        self.out.append(s)
        return s

    # -- the parts ---------------------------------------------------------------------

    def build(self) -> list[SpanData]:
        r = self.r
        sids = [sid for sid in r.sessions if sid]
        self.first_sid = sids[0] if sids else ""
        for sid in sids:
            self.trace(sid)
        uid = self.info.uid
        for turn in r.turns:
            t = self.trace(self.sid(turn.session_id))
            t.turns.append(turn)
            t.starts.append(turn.seq)
            for tcid in turn.tool_call_ids:
                t.tool_turn.setdefault(tcid, turn)
            ended = turn.ended_t_ns is not None
            self.turn_info[turn.seq] = (
                span_id(uid, t.session_id, f"turn:{turn.seq}"),
                f"turn:{turn.seq}" if ended else "end",
                turn.ended_t_ns if turn.ended_t_ns is not None else self.end_rel,
            )
        for tc in r.tool_calls.values():
            sid = self.sid(tc.session_id)
            t, parent, group, group_end = self.owner(sid, tc.first_seq)
            home = t.tool_turn.get(tc.tool_call_id)
            if home is not None:
                parent, group, group_end = self.turn_info[home.seq]
            own = span_id(uid, t.session_id, f"tool:{tc.tool_call_id}")
            self.tool_info[(sid, tc.tool_call_id)] = (own, group, parent, group_end)
        for turn in r.turns:
            if self.want(self.turn_info[turn.seq][1]):
                self.turn(turn)
        for tc in r.tool_calls.values():
            self.tool(tc)
        for perm in r.permissions:
            self.permission(perm)
        for term in r.terminals.values():
            self.terminal(term)
        for call in r.calls:
            if call.method not in _OWN_SPANS:
                self.call(call)
        if not self.traces:
            self.trace("")
        if self.want("end"):
            for t in self.traces.values():
                self.root(t)
        return self.out

    def sid(self, sid: str | None) -> str:
        return sid if sid else self.first_sid

    def root(self, t: _Trace) -> None:
        label = f"connection {self.agent_name}" if self.agent_name else "connection"
        s = SpanData(
            name=_name(label),
            trace_id=t.trace_id,
            span_id=t.root_id,
            parent_id=t.root_parent,
            start_ns=self.unix(0),
            end_ns=self.unix(max(0, self.end_rel)),
            kind="server",
            trace_state=t.trace_state,
        )
        a = s.attributes
        _put(a, "gen_ai.conversation.id", t.session_id or None)
        _put(a, "gen_ai.agent.name", self.agent_name)
        _put(a, "gen_ai.agent.version", self.agent_version)
        cname, cversion = _info(self.r.client_info)
        _put(a, "acp.client.name", cname)
        _put(a, "acp.client.version", cversion)
        _put(a, "acp.agent.name", self.agent_name)
        _put(a, "acp.agent.version", self.agent_version)
        _put(a, "acp.protocol.version", self.r.protocol_version)
        _put(a, "acp.transport", self.info.transport)
        _put(a, "acp.capture.uid", self.info.uid)
        state = self.r.sessions.get(t.session_id)
        if state is not None:
            _put(a, "acp.session.cwd", state.cwd)
            _put(a, "acp.session.mode", state.mode)
        a["acp.session.turns"] = len(t.turns)
        a["rpc.system"] = "jsonrpc"
        self.out.append(s)

    def turn(self, turn: Turn) -> None:
        t = self.trace(self.sid(turn.session_id))
        ended = turn.ended_t_ns is not None
        end = turn.ended_t_ns if turn.ended_t_ns is not None else self.end_rel
        label = f"invoke_agent {self.agent_name}" if self.agent_name else "invoke_agent"
        s = self.span(t, f"turn:{turn.seq}", label, t.root_id, turn.t_ns, end)
        s.kind = "client"
        s.group = self.turn_info[turn.seq][1]
        a = s.attributes
        a["gen_ai.operation.name"] = "invoke_agent"
        _put(a, "gen_ai.agent.name", self.agent_name)
        a["rpc.system"] = "jsonrpc"
        a["rpc.method"] = "session/prompt"
        _put(a, "rpc.jsonrpc.request_id", _request_id(turn.request_id))
        if turn.stop_reason is not None:
            a["gen_ai.response.finish_reasons"] = [attr(turn.stop_reason)]  # type: ignore[list-item]
        _put(a, "gen_ai.response.id", turn.message_id)
        a["acp.turn.index"] = turn.index
        a["acp.turn.ended"] = ended
        a["acp.turn.updates"] = turn.updates
        a["acp.turn.tool_calls"] = len(turn.tool_call_ids)
        a["acp.turn.cancelled"] = turn.cancel_seq is not None
        wait = sum(p.wait_ns or 0 for p in turn.permissions)
        a["acp.turn.permission_wait_ms"] = round(wait / 1e6, 3)
        if turn.first_output_t_ns is not None:
            a["acp.turn.time_to_first_output_ms"] = round(
                (turn.first_output_t_ns - turn.t_ns) / 1e6, 3
            )
            s.events.append(Event("acp.first_output", self.unix(turn.first_output_t_ns)))
        if turn.cancel_t_ns is not None:
            s.events.append(Event("acp.cancel_requested", self.unix(turn.cancel_t_ns)))
        if turn.acked_seq is not None:
            call = self.calls_by_seq.get(turn.seq)
            if call is not None and call.end_t_ns is not None:
                s.events.append(Event("acp.prompt_acknowledged", self.unix(call.end_t_ns)))
        self.usage(a, turn)
        ctx = self.r.turn_contexts.get(turn.seq)
        if ctx is not None and (ctx.trace_id, ctx.parent_id) != (t.trace_id, t.root_parent):
            s.links.append(Link(ctx.trace_id, ctx.parent_id, ctx.trace_state))
        if turn.error is not None:
            _error(s, turn.error, self.unix(end))
        if self.content:
            prompt = [{"role": "user", "parts": [{"type": "text", "content": turn.prompt_text}]}]
            _put(a, "gen_ai.input.messages", _json(prompt), MAX_CONTENT)
            answer: dict[str, Any] = {
                "role": "assistant",
                "parts": [{"type": "text", "content": turn.text("agent")}],
            }
            if turn.text("thought"):
                answer["parts"].insert(0, {"type": "reasoning", "content": turn.text("thought")})
            if turn.stop_reason is not None:
                answer["finish_reason"] = turn.stop_reason
            _put(a, "gen_ai.output.messages", _json([answer]), MAX_CONTENT)

    def usage(self, a: dict[str, AttrValue], turn: Turn) -> None:
        u = self.r.usage_at.get(turn.ended_seq) if turn.ended_seq is not None else None
        if u is not None:
            for key, name in (
                ("inputTokens", "gen_ai.usage.input_tokens"),
                ("outputTokens", "gen_ai.usage.output_tokens"),
                ("cachedReadTokens", "gen_ai.usage.cache_read.input_tokens"),
                ("cachedWriteTokens", "gen_ai.usage.cache_creation.input_tokens"),
                ("thoughtTokens", "acp.usage.thought_tokens"),
                ("totalTokens", "acp.usage.total_tokens"),
            ):
                v = u.get(key)
                if isinstance(v, int) and not isinstance(v, bool):
                    _put(a, name, v)
        state = self.r.sessions.get(turn.session_id or "")
        if state is None:
            return
        last = turn.ended_seq if turn.ended_seq is not None else self.r.last_seq
        seen = [c.value for c in state.usage_history if turn.seq < c.seq <= last]
        if seen and isinstance(seen[-1], dict):
            v = seen[-1]
            _put(a, "acp.context.used_tokens", v.get("used"))
            _put(a, "acp.context.size_tokens", v.get("size"))
            cost = v.get("cost")
            if isinstance(cost, dict):
                _put(a, "acp.usage.cost", cost.get("amount"))
                _put(a, "acp.usage.cost_currency", cost.get("currency"))

    def owner(self, sid: str, seq: int) -> tuple[_Trace, bytes, str, int]:
        """The trace, parent span, group and group end of something seen at ``seq``."""
        t = self.trace(sid)
        i = bisect.bisect_right(t.starts, seq) - 1
        if i >= 0:
            turn = t.turns[i]
            if turn.ended_seq is None or seq <= turn.ended_seq:
                return (t, *self.turn_info[turn.seq])
        return t, t.root_id, "end", self.end_rel

    def tool(self, tc: ToolCall) -> None:
        sid = self.sid(tc.session_id)
        _, group, parent, group_end = self.tool_info[(sid, tc.tool_call_id)]
        if not self.want(group):
            return
        t = self.trace(sid)
        ended = tc.ended_t_ns
        end = ended if ended is not None else group_end
        label = tc.title or tc.name or tc.tool_call_id
        s = self.span(t, f"tool:{tc.tool_call_id}", f"execute_tool {label}", parent,
                      tc.first_t_ns, end)  # fmt: skip
        s.group = group
        a = s.attributes
        a["gen_ai.operation.name"] = "execute_tool"
        _put(a, "gen_ai.tool.call.id", tc.tool_call_id)
        _put(a, "gen_ai.tool.name", tc.name or tc.title)
        _put(a, "acp.tool.title", tc.title)
        _put(a, "acp.tool.kind", tc.kind)
        _put(a, "acp.tool.status", tc.status)
        paths = [loc.get("path") for loc in tc.locations if isinstance(loc, dict)]
        if paths:
            _put(a, "acp.tool.locations", paths)
        if tc.terminal_ids:
            _put(a, "acp.tool.terminal_ids", tc.terminal_ids)
        a["acp.tool.updates"] = tc.updates
        if tc.replayed:
            a["acp.tool.replayed"] = True
        for change in tc.status_history:
            ev: dict[str, AttrValue] = {}
            _put(ev, "acp.tool.status", change.status)
            s.events.append(Event("acp.tool.status", self.unix(change.t_ns), ev))
        if tc.status == "failed":
            s.status, s.status_message = "error", "failed"
        if self.content:
            if tc.raw_input is not None:
                _put(a, "gen_ai.tool.call.arguments", _json(tc.raw_input), MAX_CONTENT)
            if tc.raw_output is not None:
                _put(a, "gen_ai.tool.call.result", _json(tc.raw_output), MAX_CONTENT)

    def permission(self, p: Permission) -> None:
        sid = self.sid(p.session_id)
        t, parent, group, group_end = self.owner(sid, p.seq)
        if not self.want(group):
            return
        tool = self.tool_info.get((sid, p.tool_call_id)) if p.tool_call_id else None
        if tool is not None:
            parent = tool[0]
        end = p.answered_t_ns if p.answered_t_ns is not None else group_end
        s = self.span(t, f"permission:{p.seq}", "session/request_permission", parent, p.t_ns, end)
        s.group = group
        a = s.attributes
        a["rpc.system"] = "jsonrpc"
        a["rpc.method"] = "session/request_permission"
        _put(a, "rpc.jsonrpc.request_id", _request_id(p.request_id))
        _put(a, "gen_ai.tool.call.id", p.tool_call_id)
        _put(a, "acp.permission.title", p.title)
        opts = [o for o in p.options if isinstance(o, dict)]
        _put(a, "acp.permission.options", [o.get("optionId") for o in opts])
        _put(a, "acp.permission.option_kinds", [o.get("kind") for o in opts])
        _put(a, "acp.permission.outcome", p.outcome)
        _put(a, "acp.permission.option_id", p.option_id)
        _put(a, "acp.permission.option_kind", p.option_kind)
        if p.approved is not None:
            a["acp.permission.approved"] = p.approved
        if p.wait_ns is not None:
            a["acp.permission.wait_ms"] = round(p.wait_ns / 1e6, 3)
        if p.answered_t_ns is not None:
            s.events.append(Event("acp.permission.answered", self.unix(p.answered_t_ns)))
        if p.error is not None:
            _error(s, p.error, self.unix(end))

    def terminal(self, term: Terminal) -> None:
        sid = self.sid(term.session_id)
        t, parent, group, group_end = self.owner(sid, term.first_seq)
        for tcid in term.tool_call_ids:
            tool = self.tool_info.get((sid, tcid))
            if tool is not None:
                parent, group, group_end = tool[0], tool[1], tool[3]
                break
        if not self.want(group):
            return
        end = group_end
        for e in term.events:
            if e.kind in ("exit", "release", "kill"):
                end = e.t_ns
                break
        else:
            if term.events:
                end = term.events[-1].t_ns
        command = term.command or ""
        label = f"terminal {command}" if command else "terminal"
        s = self.span(t, f"terminal:{term.terminal_id}", label, parent, term.first_t_ns, end)
        s.group = group
        a = s.attributes
        _put(a, "acp.terminal.id", term.terminal_id)
        _put(a, "acp.terminal.owner", term.owner)
        _put(a, "acp.terminal.command", term.command)
        if term.args:
            _put(a, "acp.terminal.args", term.args)
        _put(a, "acp.terminal.cwd", term.cwd)
        if term.exit_status is not None:
            _put(a, "process.exit.code", term.exit_status.get("exitCode"))
            _put(a, "acp.terminal.signal", term.exit_status.get("signal"))
        a["acp.terminal.output_bytes"] = len(term.output)
        for flag in ("truncated", "killed", "released"):
            if getattr(term, flag):
                a[f"acp.terminal.{flag}"] = True
        for e in term.events:
            if e.kind in ("create", "exit", "kill", "release", "wait_for_exit", "cancel"):
                s.events.append(Event(f"acp.terminal.{e.kind}", self.unix(e.t_ns)))
        if self.content:
            _put(a, "acp.terminal.output", term.text, MAX_CONTENT)

    def call(self, c: Call) -> None:
        sid = self.sid(c.session_id)
        t, parent, group, group_end = self.owner(sid, c.seq)
        if not self.want(group):
            return
        end = c.end_t_ns if c.end_t_ns is not None else group_end
        s = self.span(t, f"call:{c.seq}:{c.id}", c.method or "request", parent, c.t_ns, end)
        s.group = group
        a = s.attributes
        a["rpc.system"] = "jsonrpc"
        _put(a, "rpc.method", c.method)
        _put(a, "rpc.jsonrpc.request_id", _request_id(c.id))
        a["acp.direction"] = c.direction.value
        if c.end_seq is None:
            a["acp.rpc.answered"] = False
        _put(a, "file.path", c.path)
        _put(a, "file.size", c.size)
        _put(a, "acp.terminal.id", c.terminal_id)
        if c.error is not None:
            _error(s, c.error, self.unix(end))


def spans(
    info: CaptureInfo,
    fold: TraceFold,
    *,
    content: bool = False,
    groups: set[str] | None = None,
) -> list[SpanData]:
    """Every span of the capture folded so far (with ``groups``: only the spans of those
    groups, see :attr:`SpanData.group`). Without ``content`` no prompt, answer, tool input
    or output, or terminal output is included."""
    return _Builder(info, fold, content, groups).build()


def resource(
    info: CaptureInfo, env: dict[str, str], *, host: str | None, version: str
) -> dict[str, AttrValue]:
    """The resource of a capture's spans: who recorded it, where, which agent."""
    base: dict[str, AttrValue] = {"service.version": info.proxy_version or version}
    if host:
        base["host.name"] = host
    if info.agent_command:
        base["acp.agent.command"] = attr(info.agent_command)  # type: ignore[assignment]
    return resource_attributes(base, env)

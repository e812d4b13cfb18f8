"""Recorded frames to span descriptions (pure, no I/O).

What belongs here: :func:`spans`, which turns a :class:`~acp_proxy.otel.core.fold.TraceFold`
into :class:`~acp_proxy.otel.core.model.SpanData` values: one trace per ACP session, a root span
for the connection, a span per prompt turn, tool call, permission wait, terminal and
request, each with its attributes and events; and :func:`resource`, the resource of a
capture's spans. Where each span goes is :mod:`acp_proxy.otel.core.tree`'s. ``docs/otel.md``
lists every span and attribute.
"""

from __future__ import annotations

from typing import Any

from acp_proxy.otel.core.agents import latest, subagent
from acp_proxy.otel.core.fold import Call, CaptureInfo, TraceFold
from acp_proxy.otel.core.model import (
    MAX_CONTENT,
    AttrValue,
    SpanData,
    SpanEvent,
    SpanLink,
    attr,
    resource_attributes,
    span_id,
)
from acp_proxy.otel.core.tree import (
    SpanTree,
    Trace,
    json_text,
    mark_error,
    peer_info,
    put,
    reader_id,
    short_name,
)
from acp_proxy.reconstruct.session import Permission, Turn
from acp_proxy.reconstruct.terminals import Terminal
from acp_proxy.reconstruct.tools import ToolCall

__all__ = ["resource", "spans"]

_OWN_SPANS = ("session/prompt", "session/request_permission")


class _Builder(SpanTree):
    def build(self) -> list[SpanData]:
        r = self.r
        sids = [sid for sid in r.sessions if sid]
        self.first_sid = sids[0] if sids else ""
        for sid in [*sids, *r.subagents]:
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
                if t.parent is None:
                    self.root(t)
                else:
                    subagent(self, t)
        if self.latest:
            latest(self.out)
        return self.out

    def sid(self, sid: str | None) -> str:
        return sid if sid else self.first_sid

    def root(self, t: Trace) -> None:
        label = f"connection {self.agent_name}" if self.agent_name else "connection"
        s = SpanData(
            name=short_name(label),
            trace_id=t.trace_id,
            span_id=t.root_id,
            parent_id=t.root_parent,
            start_ns=self.unix(0),
            end_ns=self.unix(max(0, self.end_rel)),
            kind="server",
            trace_state=t.trace_state,
        )
        a = s.attributes
        put(a, "gen_ai.conversation.id", t.session_id or None)
        put(a, "session.id", t.session_id or None)  # Langfuse and Phoenix group by it
        put(a, "gen_ai.agent.name", self.agent_name)
        put(a, "gen_ai.agent.version", self.agent_version)
        cname, cversion = peer_info(self.r.client_info)
        put(a, "acp.client.name", cname)
        put(a, "acp.client.version", cversion)
        put(a, "acp.agent.name", self.agent_name)
        put(a, "acp.agent.version", self.agent_version)
        put(a, "acp.protocol.version", self.r.protocol_version)
        put(a, "acp.transport", self.info.transport)
        put(a, "acp.capture.uid", self.info.uid)
        state = self.r.sessions.get(t.session_id)
        if state is not None:
            put(a, "acp.session.cwd", state.cwd)
            put(a, "acp.session.mode", state.mode)
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
        put(a, "gen_ai.agent.name", self.agent_name)
        a["rpc.system"] = "jsonrpc"
        a["rpc.method"] = "session/prompt"
        put(a, "rpc.jsonrpc.request_id", reader_id(turn.request_id))
        if turn.stop_reason is not None:
            a["gen_ai.response.finish_reasons"] = [attr(turn.stop_reason)]  # type: ignore[list-item]
        put(a, "gen_ai.response.id", turn.message_id)
        a["acp.turn.index"] = turn.index
        a["acp.turn.ended"] = ended
        a["acp.turn.updates"] = turn.updates
        a["acp.turn.tool_calls"] = len(turn.tool_call_ids)
        a["acp.turn.cancelled"] = turn.cancel_seq is not None
        if turn.retries:  # the same prompt sent again with its idempotencyKey: one turn
            a["acp.turn.retries"] = len(turn.retries)
            for retry in turn.retries:
                s.events.append(SpanEvent("acp.prompt_retried", self.unix(retry.t_ns)))
        wait = sum(p.wait_ns or 0 for p in turn.permissions)
        a["acp.turn.permission_wait_ms"] = round(wait / 1e6, 3)
        if turn.first_output_t_ns is not None:
            a["acp.turn.time_to_first_output_ms"] = round(
                (turn.first_output_t_ns - turn.t_ns) / 1e6, 3
            )
            s.events.append(SpanEvent("acp.first_output", self.unix(turn.first_output_t_ns)))
        if turn.cancel_t_ns is not None:
            s.events.append(SpanEvent("acp.cancel_requested", self.unix(turn.cancel_t_ns)))
        if turn.acked_seq is not None:
            call = self.calls_by_seq.get(turn.seq)
            if call is not None and call.end_t_ns is not None:
                s.events.append(SpanEvent("acp.prompt_acknowledged", self.unix(call.end_t_ns)))
        self.usage(a, turn)
        ctx = self.r.turn_contexts.get(turn.seq)
        if ctx is not None and (ctx.trace_id, ctx.parent_id) != (t.trace_id, t.root_parent):
            s.links.append(SpanLink(ctx.trace_id, ctx.parent_id, ctx.trace_state))
        if turn.error is not None:
            mark_error(s, turn.error, self.unix(end))
        if self.content:
            prompt = [{"role": "user", "parts": [{"type": "text", "content": turn.prompt_text}]}]
            put(a, "gen_ai.input.messages", json_text(prompt), MAX_CONTENT)
            answer: dict[str, Any] = {
                "role": "assistant",
                "parts": [{"type": "text", "content": turn.text("agent")}],
            }
            if turn.text("thought"):
                answer["parts"].insert(0, {"type": "reasoning", "content": turn.text("thought")})
            if turn.stop_reason is not None:
                answer["finish_reason"] = turn.stop_reason
            put(a, "gen_ai.output.messages", json_text([answer]), MAX_CONTENT)

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
                    put(a, name, v)
        state = self.r.sessions.get(turn.session_id or "")
        if state is None:
            return
        last = turn.ended_seq if turn.ended_seq is not None else self.r.last_seq
        seen = [c.value for c in state.usage_history if turn.seq < c.seq <= last]
        if seen and isinstance(seen[-1], dict):
            v = seen[-1]
            put(a, "acp.context.used_tokens", v.get("used"))
            put(a, "acp.context.size_tokens", v.get("size"))
            cost = v.get("cost")
            if isinstance(cost, dict):
                put(a, "acp.usage.cost", cost.get("amount"))
                put(a, "acp.usage.cost_currency", cost.get("currency"))

    def tool(self, tc: ToolCall) -> None:
        if tc.replayed:  # history a load or resume replayed: not new execution
            return
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
        put(a, "gen_ai.tool.call.id", tc.tool_call_id)
        put(a, "gen_ai.tool.name", tc.name or tc.title)
        put(a, "acp.tool.title", tc.title)
        put(a, "acp.tool.kind", tc.kind)
        put(a, "acp.tool.status", tc.status)
        paths = [loc.get("path") for loc in tc.locations if isinstance(loc, dict)]
        if paths:
            put(a, "acp.tool.locations", paths)
        if tc.terminal_ids:
            put(a, "acp.tool.terminal_ids", tc.terminal_ids)
        a["acp.tool.updates"] = tc.updates
        if tc.replayed:
            a["acp.tool.replayed"] = True
        for change in tc.status_history:
            ev: dict[str, AttrValue] = {}
            put(ev, "acp.tool.status", change.status)
            s.events.append(SpanEvent("acp.tool.status", self.unix(change.t_ns), ev))
        if tc.status == "failed":
            s.status, s.status_message = "error", "failed"
        if self.content:
            if tc.raw_input is not None:
                put(a, "gen_ai.tool.call.arguments", json_text(tc.raw_input), MAX_CONTENT)
            if tc.raw_output is not None:
                put(a, "gen_ai.tool.call.result", json_text(tc.raw_output), MAX_CONTENT)

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
        put(a, "rpc.jsonrpc.request_id", reader_id(p.request_id))
        put(a, "gen_ai.tool.call.id", p.tool_call_id)
        put(a, "acp.permission.title", p.title)
        opts = [o for o in p.options if isinstance(o, dict)]
        put(a, "acp.permission.options", [o.get("optionId") for o in opts])
        put(a, "acp.permission.option_kinds", [o.get("kind") for o in opts])
        put(a, "acp.permission.outcome", p.outcome)
        put(a, "acp.permission.option_id", p.option_id)
        put(a, "acp.permission.option_kind", p.option_kind)
        if p.approved is not None:
            a["acp.permission.approved"] = p.approved
        if p.wait_ns is not None:
            a["acp.permission.wait_ms"] = round(p.wait_ns / 1e6, 3)
        if p.answered_t_ns is not None:
            s.events.append(SpanEvent("acp.permission.answered", self.unix(p.answered_t_ns)))
        if p.error is not None:
            mark_error(s, p.error, self.unix(end))

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
        put(a, "acp.terminal.id", term.terminal_id)
        put(a, "acp.terminal.owner", term.owner)
        put(a, "acp.terminal.command", term.command)
        if term.args:
            put(a, "acp.terminal.args", term.args)
        put(a, "acp.terminal.cwd", term.cwd)
        if term.exit_status is not None:
            put(a, "process.exit.code", term.exit_status.get("exitCode"))
            put(a, "acp.terminal.signal", term.exit_status.get("signal"))
        a["acp.terminal.output_bytes"] = len(term.output)
        for flag in ("truncated", "killed", "released"):
            if getattr(term, flag):
                a[f"acp.terminal.{flag}"] = True
        for e in term.events:
            if e.kind in ("create", "exit", "kill", "release", "wait_for_exit", "cancel"):
                s.events.append(SpanEvent(f"acp.terminal.{e.kind}", self.unix(e.t_ns)))
        if self.content:
            put(a, "acp.terminal.output", term.text, MAX_CONTENT)

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
        put(a, "rpc.method", c.method)
        put(a, "rpc.jsonrpc.request_id", reader_id(c.id))
        a["acp.direction"] = c.direction.value
        if c.end_seq is None:
            a["acp.rpc.answered"] = False
        put(a, "file.path", c.path)
        put(a, "file.size", c.size)
        put(a, "acp.terminal.id", c.terminal_id)
        if c.error is not None:
            mark_error(s, c.error, self.unix(end))


def spans(
    info: CaptureInfo,
    fold: TraceFold,
    *,
    content: bool = False,
    groups: set[str] | None = None,
    latest: bool = False,
) -> list[SpanData]:
    """Every span of the capture folded so far (with ``groups``: only the spans of those
    groups, see :attr:`SpanData.group`). Without ``content`` no prompt, answer, tool input
    or output, or terminal output is included; with ``latest``, what the latest
    experimental GenAI conventions add (:func:`acp_proxy.otel.core.agents.latest`)."""
    return _Builder(info, fold, content, groups, latest).build()


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

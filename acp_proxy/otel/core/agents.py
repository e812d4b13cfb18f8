"""Subagents as spans, and the latest GenAI conventions for those who opt in (pure, no I/O).

What belongs here: the ``invoke_agent`` span of a child session (docs/protocol.md §13.1) —
an INTERNAL span in its parent's trace, under the tool call whose content links the child,
else under the parent's turn in progress when the child was announced, else the parent's
root — that the child's own tool calls, permissions and requests hang under; and
:func:`latest`, the pass that adds what the latest experimental GenAI semantic conventions
name (``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``): nothing of the default
mapping changes without that opt-in. Where spans go is :mod:`acp_proxy.otel.core.tree`'s.
"""

from __future__ import annotations

from acp_proxy.otel.core.model import SpanData, attr
from acp_proxy.otel.core.tree import SpanTree, Trace, put

__all__ = ["PROVIDER", "latest", "subagent"]

PROVIDER = "acp"
"""``gen_ai.provider.name`` of an ACP agent: which model provider is behind it is not said
on the wire."""


def subagent(b: SpanTree, t: Trace) -> None:
    """The ``invoke_agent`` span of child session ``t`` (none for a child only replayed
    history named: it is no new execution)."""
    sub = b.r.subagents.get(t.session_id)
    if sub is None or sub.replayed or t.parent is None:
        return
    parent_sid = sub.parent_id
    _, parent, _, _ = b.owner(parent_sid, sub.seq)
    for tcid in sub.tool_call_ids:
        tool = b.tool_info.get((parent_sid, tcid))
        if tool is not None:
            parent = tool[0]
            break
    title = sub.fields.get("title")
    name = attr(title) if isinstance(title, str) and title else b.agent_name
    end = max(sub.t_ns, b.r.last_seen.get(t.session_id, sub.t_ns))
    s = b.span(t, "subagent", f"invoke_agent {name}" if name else "invoke_agent", parent,
               sub.t_ns, end)  # fmt: skip
    s.span_id = t.root_id
    s.group = "end"
    a = s.attributes
    a["gen_ai.operation.name"] = "invoke_agent"
    put(a, "gen_ai.agent.name", name)
    put(a, "acp.subagent.parent_session_id", parent_sid)
    put(a, "acp.subagent.title", title)
    put(a, "acp.subagent.description", sub.fields.get("description"))
    state = sub.fields.get("state")
    put(a, "acp.subagent.state", state.get("state") if isinstance(state, dict) else state)
    a["acp.subagent.updates"] = sub.updates


def latest(out: list[SpanData]) -> None:
    """What the latest experimental GenAI conventions add to the spans: the provider of
    every ``invoke_agent`` span, reasoning tokens and the time to the first chunk under
    their registered names, an agent's description, and ``error.type`` on a failed span."""
    for s in out:
        a = s.attributes
        if a.get("gen_ai.operation.name") == "invoke_agent":
            a["gen_ai.provider.name"] = PROVIDER
            put(a, "gen_ai.usage.reasoning.output_tokens", a.get("acp.usage.thought_tokens"))
            put(a, "gen_ai.agent.description", a.get("acp.subagent.description"))
            first = a.get("acp.turn.time_to_first_output_ms")
            if isinstance(first, int | float) and not isinstance(first, bool):
                a["gen_ai.response.time_to_first_chunk"] = round(first / 1000, 6)
        if s.status == "error":
            code = a.get("rpc.jsonrpc.error_code")
            a["error.type"] = str(code) if code is not None else (s.status_message or "failed")

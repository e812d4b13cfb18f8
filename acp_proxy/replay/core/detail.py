"""The facets ``acp-proxy diff`` adds to a run's summary, and their differences (pure).

What belongs here: gathering, per turn, what a person compares by eye (:class:`Detail`:
the prompt and the agent's answer text with chunks merged, tool call locations and
content, permission requests and their outcomes, terminal commands with exit status and
output, the ``initialize`` protocol version and capabilities, per-method latency and time
to first output); listing how two runs differ in those facets; and the timing of two runs
side by side, kept apart from the differences (it always changes).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from acp_proxy.protocol.frames import Direction
from acp_proxy.protocol.jsonrpc import Kind
from acp_proxy.replay.core.match import ReplayMessage, session_of
from acp_proxy.replay.core.summary import (
    Detail,
    Divergence,
    RunSummary,
    ToolSummary,
    TurnSummary,
    error_text,
    mean,
)

__all__ = ["add_details", "compare_detail", "compare_tool_detail", "timing_changes"]

A2C = Direction.AGENT_TO_CLIENT


def _text_of(content: Any) -> str:
    items = content if isinstance(content, list) else [content]
    out = []
    for item in items:
        if isinstance(item, dict):
            if isinstance(item.get("text"), str):
                out.append(item["text"])
            elif isinstance(item.get("uri"), str):
                out.append(f"<{item.get('type')} {item['uri']}>")
            elif isinstance(item.get("resource"), dict):
                out.append(f"<resource {item['resource'].get('uri')}>")
    return " ".join(out) if isinstance(content, list) else "".join(out)


def _plain(value: Any) -> Any:
    """``value`` without ``_meta`` members (they carry timings and ids that vary)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k != "_meta"}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def add_details(
    messages: Sequence[ReplayMessage],
    run: RunSummary,
    value_of: Any,
    by_seq: dict[int, ReplayMessage],
    tools: dict[str, ToolSummary],
    retries: Collection[int] = (),
) -> None:
    """Give every turn of ``run`` (and its setup) a :class:`Detail` gathered from
    ``messages``; ``value_of`` is the masked, mapped value of a message, ``tools`` the
    tool calls of the summary by id, ``retries`` the seqs of prompts that retried an
    earlier one (they and their answers belong to the first)."""
    run.setup.detail = Detail()
    for t in run.turns:
        t.detail = Detail()
    prompts = iter(run.turns)
    current: dict[str, TurnSummary] = {}
    started: dict[int, int] = {}  # turn index -> t_ns of its prompt
    terminals: dict[str, dict[str, Any]] = {}
    for m in messages:
        if m.seq in retries or m.partner in retries:
            continue
        v = value_of(m)
        if not isinstance(v, dict):
            continue
        p = v.get("params")
        params: dict[str, Any] = p if isinstance(p, dict) else {}
        if m.direction is not A2C and m.kind == Kind.REQUEST and m.method == "session/prompt":
            turn = next(prompts, run.setup)
            # keyed as looked up below: by the message's own (unmapped) session id
            current[session_of(m, by_seq) or str(params.get("sessionId"))] = turn
            started[id(turn)] = m.t_ns
            assert turn.detail is not None
            turn.detail.prompt = _text_of(params.get("prompt"))
            continue
        sid = session_of(m, by_seq)
        turn = current.get(sid, run.setup) if sid is not None else run.setup
        d = turn.detail
        assert d is not None
        if m.method == "initialize":
            _initialize(d, m, v, params)
        if m.is_response and m.partner is not None and m.method:
            asked = by_seq.get(m.partner)
            if asked is not None:
                d.latency_ms.setdefault(m.method, []).append(round((m.t_ns - asked.t_ns) / 1e6, 3))
        out_kind = m.kind in (Kind.NOTIFICATION, Kind.REQUEST)
        if m.direction is A2C and out_kind and d.first_output_ms is None and id(turn) in started:
            d.first_output_ms = round((m.t_ns - started[id(turn)]) / 1e6, 3)
        update = params.get("update")
        if m.kind == Kind.NOTIFICATION and isinstance(update, dict):
            _update(d, update, tools)
        elif m.method == "session/request_permission":
            _permission(d, m, v, params)
        elif m.method in ("terminal/create", "terminal/output", "terminal/wait_for_exit"):
            _terminal(d, m, v, params, by_seq, terminals)
    for t in [run.setup, *run.turns]:
        assert t.detail is not None
        for item in [*t.detail.permissions, *t.detail.terminals]:
            item.pop("_seq", None)
        t.detail.answer = "".join(t.detail.answer_parts)
        t.detail.thought = "".join(t.detail.thought_parts)
        t.detail.answer_parts, t.detail.thought_parts = [], []


def _initialize(d: Detail, m: ReplayMessage, v: dict[str, Any], params: dict[str, Any]) -> None:
    if m.kind == Kind.REQUEST:
        d.initialize["client"] = {
            k: params.get(k) for k in ("protocolVersion", "clientCapabilities")
        }
    elif m.kind == Kind.RESPONSE and isinstance(v.get("result"), dict):
        r = v["result"]
        d.initialize["agent"] = {
            k: r.get(k) for k in ("protocolVersion", "agentCapabilities", "authMethods")
        }


def _update(d: Detail, update: dict[str, Any], tools: dict[str, ToolSummary]) -> None:
    kind = update.get("sessionUpdate")
    if kind == "agent_message_chunk":
        d.answer_parts.append(_text_of(update.get("content")))
    elif kind == "agent_thought_chunk":
        d.thought_parts.append(_text_of(update.get("content")))
    elif kind in ("tool_call", "tool_call_update"):
        call = tools.get(str(update.get("toolCallId")))
        if call is not None:
            for loc in update.get("locations") or []:
                if isinstance(loc, dict) and isinstance(loc.get("path"), str):
                    where = f"{loc['path']}:{loc['line']}" if loc.get("line") else loc["path"]
                    if where not in call.locations:
                        call.locations.append(where)
            if update.get("content") is not None:
                call.content = _plain(update["content"])


def _permission(d: Detail, m: ReplayMessage, v: dict[str, Any], params: dict[str, Any]) -> None:
    if m.kind == Kind.REQUEST:
        tc = params.get("toolCall")
        title = tc.get("title") if isinstance(tc, dict) else None
        options = [
            o.get("kind") or o.get("name")
            for o in params.get("options") or []
            if isinstance(o, dict)
        ]
        d.permissions.append({"title": title, "options": options, "outcome": None, "_seq": m.seq})
    elif m.is_response:
        for perm in d.permissions:
            if perm.get("_seq") == m.partner:
                r = v.get("result")
                outcome = r.get("outcome") if isinstance(r, dict) else None
                if isinstance(outcome, dict):
                    chosen = outcome.get("optionId")
                    outcome = f"{outcome.get('outcome')}" + (f" {chosen}" if chosen else "")
                perm["outcome"] = outcome if outcome is not None else error_text(v)


def _terminal(
    d: Detail,
    m: ReplayMessage,
    v: dict[str, Any],
    params: dict[str, Any],
    by_seq: dict[int, ReplayMessage],
    terminals: dict[str, dict[str, Any]],
) -> None:
    if m.method == "terminal/create" and m.kind == Kind.REQUEST:
        term: dict[str, Any] = {
            "command": " ".join(
                str(x) for x in [params.get("command"), *(params.get("args") or [])]
            ),
            "exit": None,
            "output": "",
            "_seq": m.seq,
        }
        d.terminals.append(term)
    elif m.method == "terminal/create" and m.is_response:
        r = v.get("result")
        for term in d.terminals:
            if term.get("_seq") == m.partner and isinstance(r, dict):
                terminals[str(r.get("terminalId"))] = term
    elif m.method in ("terminal/output", "terminal/wait_for_exit") and m.is_response:
        asked = by_seq.get(m.partner) if m.partner is not None else None
        ap = asked.params if asked is not None else None
        found = terminals.get(str(ap.get("terminalId"))) if isinstance(ap, dict) else None
        r = v.get("result")
        if found is not None and isinstance(r, dict):
            if isinstance(r.get("output"), str):
                found["output"] = r["output"]
            status = r.get("exitStatus") if m.method == "terminal/output" else r
            if isinstance(status, dict):
                code = status.get("exitCode")
                found["exit"] = code if code is not None else status.get("signal")


def compare_detail(a: TurnSummary, b: TurnSummary) -> list[Divergence]:
    da, db = a.detail, b.detail
    assert da is not None and db is not None
    where = a.label
    out: list[Divergence] = []
    for facet in ("prompt", "answer", "thought"):
        x, y = getattr(da, facet), getattr(db, facet)
        if x != y:
            out.append(Divergence(where, facet, x, y))
    for side in sorted(set(da.initialize) | set(db.initialize)):
        x, y = da.initialize.get(side), db.initialize.get(side)
        if x != y:
            out.append(Divergence(where, f"initialize ({side})", x, y))
    for facet, name in (("permissions", "permission request"), ("terminals", "terminal")):
        xs, ys = getattr(da, facet), getattr(db, facet)
        for i in range(max(len(xs), len(ys))):
            x = xs[i] if i < len(xs) else None
            y = ys[i] if i < len(ys) else None
            if x is None or y is None:
                out.append(Divergence(where, f"{name} {i + 1}", x, y))
                continue
            for key in x:
                if x[key] != y.get(key):
                    out.append(Divergence(where, f"{name} {i + 1} {key}", x[key], y.get(key)))
    return out


def compare_tool_detail(a: TurnSummary, b: TurnSummary) -> list[Divergence]:
    out = []
    for i, (ta, tb) in enumerate(zip(a.tool_calls, b.tool_calls, strict=False)):
        name = f"tool call {i + 1} {ta.title!r}"
        if ta.locations != tb.locations:
            out.append(Divergence(a.label, f"{name} locations", ta.locations, tb.locations))
        if ta.content != tb.content:
            out.append(Divergence(a.label, f"{name} content", ta.content, tb.content))
    return out


def timing_changes(a: RunSummary, b: RunSummary) -> list[dict[str, Any]]:
    """Per turn: each method's mean latency and the time to first output, A and B."""
    rows: list[dict[str, Any]] = []
    for ta, tb in zip([a.setup, *a.turns], [b.setup, *b.turns], strict=False):
        if ta.detail is None or tb.detail is None:
            continue
        for method in sorted(set(ta.detail.latency_ms) | set(tb.detail.latency_ms)):
            x, y = ta.detail.latency_ms.get(method), tb.detail.latency_ms.get(method)
            rows.append(
                {
                    "where": ta.label,
                    "what": f"{method} latency ms",
                    "a": mean(x) if x else None,
                    "b": mean(y) if y else None,
                }
            )
        if ta.detail.first_output_ms is not None or tb.detail.first_output_ms is not None:
            rows.append(
                {
                    "where": ta.label,
                    "what": "first output ms",
                    "a": ta.detail.first_output_ms,
                    "b": tb.detail.first_output_ms,
                }
            )
    return rows

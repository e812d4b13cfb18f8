"""Comparing two runs of a session (pure, sans-I/O): what ``replay client`` reports.

What belongs here: folding a run's messages into the facts a regression gate cares about,
and listing how two runs differ. A run is summarised per *turn* (one per
``session/prompt``; in v1 the turn ends with the prompt's answer, in v2 with
``state_update`` idle, docs/protocol.md §6.2, so a turn here is everything the agent sends for a
session from one prompt to the next):

- the agent's messages per turn: update kinds, requests and answers in order (runs of the
  same ``*_chunk`` kind count as one: agents chunk text differently from run to run);
- tool calls (in order of appearance; ids are random per run and not compared): title,
  kind, the statuses they went through;
- stop reasons (v1 prompt answer, v2 idle ``state_update``), errors (both directions);
- files written (``fs/write_text_file``, v1 ``diff`` content, v2 diff ``changes``).

Values can be masked before summarising with ``ignore`` paths into the messages
(``params.update.title``, ``params.content``, ``*`` for any key or index).

With ``detail=True`` (``acp-proxy diff``, two recordings of any kind) a summary also holds
what a person compares by eye, facet by facet (:class:`Detail`): the prompt and the
agent's answer text per turn (chunks merged), tool call locations and content, permission
requests and their outcomes, terminal commands with exit status and output, the
``initialize`` protocol version and capabilities, and timing (per-method latency, time to
first output per turn) kept apart from the differences (it always changes).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from acp_proxy.protocol.frames import Direction
from acp_proxy.protocol.jsonrpc import Kind
from acp_proxy.replay.match import Mapper, Message, dump, session_of

__all__ = [
    "Detail",
    "Divergence",
    "RunSummary",
    "Turn",
    "compare",
    "nothing_compared",
    "parse_ignore",
    "summarise_run",
    "timing_changes",
]

A2C = Direction.AGENT_TO_CLIENT


@dataclass(slots=True)
class ToolCall:
    title: str | None = None
    kind: str | None = None
    statuses: list[str] = field(default_factory=list)
    turn: int = 0
    locations: list[str] = field(default_factory=list)  # detail only
    content: Any = None  # detail only: the last content seen

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"title": self.title, "kind": self.kind, "statuses": self.statuses}
        if self.locations or self.content is not None:
            out.update(locations=self.locations, content=self.content)
        return out


@dataclass(slots=True)
class Turn:
    label: str
    events: list[str] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    stop_reason: str | None = None
    errors: list[str] = field(default_factory=list)
    detail: Detail | None = None

    def to_json(self) -> dict[str, Any]:
        out = {
            "label": self.label,
            "events": self.events,
            "tool_calls": [t.to_json() for t in self.tool_calls],
            "stop_reason": self.stop_reason,
            "errors": self.errors,
        }
        if self.detail is not None:
            out.update(self.detail.to_json())
        return out


@dataclass(slots=True)
class RunSummary:
    setup: Turn = field(default_factory=lambda: Turn("setup"))
    turns: list[Turn] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "setup": self.setup.to_json(),
            "turns": [t.to_json() for t in self.turns],
            "files": self.files,
        }


@dataclass(frozen=True, slots=True)
class Divergence:
    where: str
    what: str
    recorded: Any
    replayed: Any

    def __str__(self) -> str:
        return self.text("recorded", "replayed")

    def text(self, a: str, b: str) -> str:
        was, now = _show(self.recorded), _show(self.replayed)
        return f"{self.where} · {self.what}: {a} {was}; {b} {now}"

    def to_json(self) -> dict[str, Any]:
        return {
            "where": self.where,
            "what": self.what,
            "recorded": self.recorded,
            "replayed": self.replayed,
        }


def _show(v: Any) -> str:
    if v is None:
        return "nothing"
    if isinstance(v, list):
        return " → ".join(map(str, v)) if v else "nothing"
    if isinstance(v, str) and "\n" not in v:
        return v if len(v) <= 80 else v[:79] + "…"
    text = dump(v).decode("utf-8", "replace")
    return text if len(text) <= 80 else text[:79] + "…"


def parse_ignore(paths: Iterable[str]) -> list[tuple[str, ...]]:
    """``params.update.title`` → ``("params", "update", "title")``; a leading ``$.`` is fine."""
    out = []
    for p in paths:
        p = p.removeprefix("$.").removeprefix("$")
        out.append(tuple(part for part in p.replace("[", ".").replace("]", "").split(".") if part))
    return out


def _strip(value: Any, patterns: Sequence[tuple[str, ...]], path: tuple[str, ...] = ()) -> Any:
    if not patterns:
        return value
    if isinstance(value, dict):
        return {
            k: _strip(v, patterns, (*path, k))
            for k, v in value.items()
            if not _hit((*path, k), patterns)
        }
    if isinstance(value, list):
        return [
            _strip(v, patterns, (*path, str(i)))
            for i, v in enumerate(value)
            if not _hit((*path, str(i)), patterns)
        ]
    return value


def _hit(path: tuple[str, ...], patterns: Sequence[tuple[str, ...]]) -> bool:
    return any(
        len(p) == len(path) and all(a in ("*", b) for a, b in zip(p, path, strict=True))
        for p in patterns
    )


def summarise_run(
    messages: Sequence[Message],
    *,
    ignore: Sequence[tuple[str, ...]] = (),
    mapper: Mapper | None = None,
    detail: bool = False,
) -> RunSummary:
    """Fold a run into a :class:`RunSummary`. ``mapper`` brings a replayed run's paths back
    to the recording's terms (``to_recorded``); ``detail`` adds the facets of
    :class:`Detail`."""
    by_seq = {m.seq: m for m in messages}
    run = RunSummary()
    current: dict[str, Turn] = {}  # session → its turn in progress
    prompt_session: dict[int, str] = {}
    tools: dict[str, ToolCall] = {}
    sessions: dict[str, int] = {}

    def value_of(m: Message) -> Any:
        v = _strip(m.value, ignore)
        return mapper.to_recorded(v) if mapper is not None else v

    def session(m: Message) -> str | None:
        """The session of ``m`` in the recording's terms (whatever ``ignore`` leaves out:
        the session decides which turn a message belongs to, on both sides alike)."""
        sid = session_of(m, by_seq)
        if sid is not None and mapper is not None:
            return mapper.live_to_rec_sid.get(sid, sid)
        return sid

    for m in messages:
        v = value_of(m)
        if not isinstance(v, dict):
            continue
        raw_params = v.get("params")
        params: dict[str, Any] = raw_params if isinstance(raw_params, dict) else {}
        if m.direction is not A2C:
            if m.kind == Kind.REQUEST and m.method == "session/prompt":
                sid = str(session(m))
                n = sessions.setdefault(sid, len(sessions) + 1)
                turn = Turn(f"turn {len(run.turns) + 1} (session {n})")
                run.turns.append(turn)
                current[sid] = turn
                prompt_session[m.seq] = sid
            elif m.kind == Kind.ERROR:
                asked = by_seq.get(m.partner) if m.partner is not None else None
                turn = current.get(str(session(asked)), run.setup) if asked else run.setup
                turn.errors.append(f"client answered {m.method} with {_error_text(v)}")
            continue
        owner = session(m)
        turn = current.get(owner, run.setup) if owner is not None else run.setup
        if m.kind == Kind.NOTIFICATION:
            update = params.get("update")
            if m.method == "session/update" and isinstance(update, dict):
                kind = str(update.get("sessionUpdate"))
                _event(turn, kind)
                _tool(update, kind, tools, turn)
                _files(update, run)
                if kind == "state_update" and update.get("state") == "idle":
                    reason = update.get("stopReason")
                    turn.stop_reason = str(reason) if reason is not None else None
            else:
                _event(turn, str(m.method))
        elif m.kind == Kind.REQUEST:
            _event(turn, f"asks {m.method}")
            if m.method == "fs/write_text_file":
                run.files[str(params.get("path"))] = str(params.get("content"))
        elif m.kind == Kind.RESPONSE:
            result = v.get("result")
            _event(turn, f"answers {m.method}")
            if m.method == "session/prompt" and isinstance(result, dict) and "stopReason" in result:
                turn.stop_reason = str(result["stopReason"])
        elif m.kind == Kind.ERROR:
            _event(turn, f"fails {m.method}")
            turn.errors.append(f"{m.method} failed with {_error_text(v)}")
    if detail:
        _details(messages, run, value_of, by_seq, tools)
    return run


def _event(turn: Turn, name: str) -> None:
    if name.endswith("_chunk") and turn.events and turn.events[-1] == name:
        return
    turn.events.append(name)


def _tool(update: dict[str, Any], kind: str, tools: dict[str, ToolCall], turn: Turn) -> None:
    if kind not in ("tool_call", "tool_call_update"):
        return
    tid = str(update.get("toolCallId"))
    call = tools.get(tid)
    if call is None:
        call = tools[tid] = ToolCall()
        turn.tool_calls.append(call)
    if isinstance(update.get("title"), str):
        call.title = update["title"]
    if isinstance(update.get("kind"), str):
        call.kind = update["kind"]
    status = update.get("status")
    if kind == "tool_call" and status is None:
        status = "pending"  # the v1 default (docs/protocol.md §5.1)
    if isinstance(status, str) and (not call.statuses or call.statuses[-1] != status):
        call.statuses.append(status)


def _files(update: dict[str, Any], run: RunSummary) -> None:
    content = update.get("content")
    items = content if isinstance(content, list) else [content]
    for item in items:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "content" and isinstance(item.get("content"), dict):
            item = item["content"]
        if item.get("type") != "diff":
            continue
        if isinstance(item.get("path"), str):  # v1 (§6.3)
            run.files[item["path"]] = str(item.get("newText"))
        for change in item.get("changes") or []:  # v2
            if isinstance(change, dict) and isinstance(change.get("path"), str):
                run.files.setdefault(change["path"], f"<{change.get('operation')}>")


def _error_text(v: dict[str, Any]) -> str:
    e = v.get("error")
    text = f"{e.get('code')} {e.get('message')}" if isinstance(e, dict) else str(e)
    return text if len(text) <= 72 else text[:71] + "…"


def nothing_compared(recorded: RunSummary) -> str | None:
    """Why comparing against ``recorded`` would compare nothing (None: it compares)."""
    if not recorded.turns and not recorded.setup.events and not recorded.files:
        return "the recording holds nothing the agent said"
    if recorded.turns and not any(t.events for t in recorded.turns):
        return (
            f"none of the agent's messages belongs to any of the {len(recorded.turns)} "
            "recorded turn(s)"
        )
    return None


def compare(recorded: RunSummary, replayed: RunSummary) -> list[Divergence]:
    """How ``replayed`` differs from ``recorded``, facet by facet, most telling first (the
    :class:`Detail` facets too, when both summaries have them)."""
    out: list[Divergence] = []
    if recorded.setup.detail is not None and replayed.setup.detail is not None:
        out.extend(_compare_detail(recorded.setup, replayed.setup))
    if len(recorded.turns) != len(replayed.turns):
        out.append(Divergence("run", "number of turns", len(recorded.turns), len(replayed.turns)))
    pairs = [(recorded.setup, replayed.setup), *zip(recorded.turns, replayed.turns, strict=False)]
    for a, b in pairs:
        where = a.label
        if a.stop_reason != b.stop_reason:
            out.append(Divergence(where, "stop reason", a.stop_reason, b.stop_reason))
        for i in range(max(len(a.tool_calls), len(b.tool_calls))):
            ta = a.tool_calls[i] if i < len(a.tool_calls) else None
            tb = b.tool_calls[i] if i < len(b.tool_calls) else None
            name = f"tool call {i + 1} {((ta or tb) or ToolCall()).title!r}"
            if ta is None or tb is None:
                out.append(Divergence(where, name, ta and ta.to_json(), tb and tb.to_json()))
                continue
            if ta.statuses != tb.statuses:
                out.append(Divergence(where, f"{name} statuses", ta.statuses, tb.statuses))
            if ta.title != tb.title:
                out.append(Divergence(where, f"tool call {i + 1} title", ta.title, tb.title))
            if ta.kind != tb.kind:
                out.append(Divergence(where, f"{name} kind", ta.kind, tb.kind))
        if a.errors != b.errors:
            out.append(Divergence(where, "errors", a.errors, b.errors))
        if a is not recorded.setup and a.detail is not None and b.detail is not None:
            out.extend(_compare_detail(a, b))
            out.extend(_compare_tool_detail(a, b))
        matcher = difflib.SequenceMatcher(a=a.events, b=b.events, autojunk=False)
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op != "equal":
                at = f"messages {i1 + 1}–{i2}" if i2 > i1 + 1 else f"message {i1 + 1}"
                if i2 == i1:
                    at = f"after message {i1}"
                out.append(Divergence(where, at, a.events[i1:i2], b.events[j1:j2]))
    for path in sorted(set(recorded.files) | set(replayed.files)):
        fa, fb = recorded.files.get(path), replayed.files.get(path)
        if fa != fb:
            out.append(Divergence("files", f"written {path}", fa, fb))
    return out


# -- detail: the facets ``acp-proxy diff`` adds ----------------------------------------------


@dataclass(slots=True)
class Detail:
    """What :func:`summarise_run` gathers with ``detail=True``, per turn (and setup)."""

    prompt: str = ""
    answer: str = ""
    thought: str = ""
    permissions: list[dict[str, Any]] = field(default_factory=list)
    terminals: list[dict[str, Any]] = field(default_factory=list)
    initialize: dict[str, Any] = field(default_factory=dict)
    latency_ms: dict[str, list[float]] = field(default_factory=dict)  # method -> latencies
    first_output_ms: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "answer": self.answer,
            "thought": self.thought,
            "permissions": self.permissions,
            "terminals": self.terminals,
            "initialize": self.initialize,
            "timing": {
                "latency_ms": {k: _mean(v) for k, v in self.latency_ms.items()},
                "first_output_ms": self.first_output_ms,
            },
        }


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 3) if values else 0.0


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


def _details(
    messages: Sequence[Message],
    run: RunSummary,
    value_of: Any,
    by_seq: dict[int, Message],
    tools: dict[str, ToolCall],
) -> None:
    run.setup.detail = Detail()
    for t in run.turns:
        t.detail = Detail()
    prompts = iter(run.turns)
    current: dict[str, Turn] = {}
    started: dict[int, int] = {}  # turn index -> t_ns of its prompt
    terminals: dict[str, dict[str, Any]] = {}
    for m in messages:
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
            if m.kind == Kind.REQUEST:
                d.initialize["client"] = {
                    k: params.get(k) for k in ("protocolVersion", "clientCapabilities")
                }
            elif m.kind == Kind.RESPONSE and isinstance(v.get("result"), dict):
                r = v["result"]
                d.initialize["agent"] = {
                    k: r.get(k) for k in ("protocolVersion", "agentCapabilities", "authMethods")
                }
        if m.is_response and m.partner is not None and m.method:
            asked = by_seq.get(m.partner)
            if asked is not None:
                d.latency_ms.setdefault(m.method, []).append(round((m.t_ns - asked.t_ns) / 1e6, 3))
        out_kind = m.kind in (Kind.NOTIFICATION, Kind.REQUEST)
        if m.direction is A2C and out_kind and d.first_output_ms is None and id(turn) in started:
            d.first_output_ms = round((m.t_ns - started[id(turn)]) / 1e6, 3)
        update = params.get("update")
        if m.kind == Kind.NOTIFICATION and isinstance(update, dict):
            kind = update.get("sessionUpdate")
            if kind == "agent_message_chunk":
                d.answer += _text_of(update.get("content"))
            elif kind == "agent_thought_chunk":
                d.thought += _text_of(update.get("content"))
            elif kind in ("tool_call", "tool_call_update"):
                call = tools.get(str(update.get("toolCallId")))
                if call is not None:
                    for loc in update.get("locations") or []:
                        if isinstance(loc, dict) and isinstance(loc.get("path"), str):
                            where = (
                                f"{loc['path']}:{loc['line']}" if loc.get("line") else loc["path"]
                            )
                            if where not in call.locations:
                                call.locations.append(where)
                    if update.get("content") is not None:
                        call.content = _plain(update["content"])
        elif m.method == "session/request_permission" and m.kind == Kind.REQUEST:
            tc = params.get("toolCall")
            title = tc.get("title") if isinstance(tc, dict) else None
            options = [
                o.get("kind") or o.get("name")
                for o in params.get("options") or []
                if isinstance(o, dict)
            ]
            d.permissions.append(
                {"title": title, "options": options, "outcome": None, "_seq": m.seq}
            )
        elif m.method == "session/request_permission" and m.is_response:
            for perm in d.permissions:
                if perm.get("_seq") == m.partner:
                    r = v.get("result")
                    outcome = r.get("outcome") if isinstance(r, dict) else None
                    if isinstance(outcome, dict):
                        chosen = outcome.get("optionId")
                        outcome = f"{outcome.get('outcome')}" + (f" {chosen}" if chosen else "")
                    perm["outcome"] = outcome if outcome is not None else _error_text(v)
        elif m.method == "terminal/create" and m.kind == Kind.REQUEST:
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
    for t in [run.setup, *run.turns]:
        assert t.detail is not None
        for item in [*t.detail.permissions, *t.detail.terminals]:
            item.pop("_seq", None)


def _compare_detail(a: Turn, b: Turn) -> list[Divergence]:
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


def _compare_tool_detail(a: Turn, b: Turn) -> list[Divergence]:
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
                    "a": _mean(x) if x else None,
                    "b": _mean(y) if y else None,
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

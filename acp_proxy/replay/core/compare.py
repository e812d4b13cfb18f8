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
- a child session's messages (docs/protocol.md §13.1) belong to its parent's turn in
  progress; a prompt sent again with the ``idempotencyKey`` of an earlier prompt of its
  session is a retry of that turn (§13.3), counted in its ``retries``, never a turn of its
  own, and its answer is not a message of the turn;
- what the agent announced on its own time (:data:`AMBIENT` updates, an extension's
  notifications before any turn): which, not where — a run that announced less diverges;
- files written (``fs/write_text_file``, v1 ``diff`` content, v2 diff ``changes``).

Values can be masked before summarising with ``ignore`` paths into the messages
(``params.update.title``, ``params.content``, ``*`` for any key or index).

With ``detail=True`` (``acp-proxy diff``, two recordings of any kind) a summary also holds
what a person compares by eye, facet by facet: :mod:`acp_proxy.replay.core.detail` gathers and
compares those. The values all this speaks in are :mod:`acp_proxy.replay.core.summary`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from acp_proxy.protocol.frames import Direction
from acp_proxy.protocol.jsonrpc import Kind
from acp_proxy.replay.core.detail import add_details, compare_detail, compare_tool_detail
from acp_proxy.replay.core.mapper import Mapper, child_announced
from acp_proxy.replay.core.match import ReplayMessage, session_of
from acp_proxy.replay.core.sequences import opcodes
from acp_proxy.replay.core.summary import (
    Divergence,
    RunSummary,
    ToolSummary,
    TurnSummary,
    error_text,
)

__all__ = [
    "AMBIENT",
    "EXIT_CODE",
    "compare",
    "nothing_compared",
    "parse_ignore",
    "summarise_run",
]

AMBIENT = frozenset(
    {"available_commands_update", "current_mode_update", "config_option_update",
     "session_info_update"}
)  # fmt: skip
"""Updates an agent sends about a session on a timer or when it likes, not as a step of a
turn: where they fall between the turn's messages is timing, so a run is compared on which
of them it announced, not where (nor how often)."""

EXIT_CODE = ("exit_code",)
"""The ``--ignore`` key for the agent's exit code (a run-level fact, not a message path)."""

A2C = Direction.AGENT_TO_CLIENT


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


@dataclass(slots=True)
class _Turns:
    """Which turn each message of a run belongs to: one per prompt, a retry folded into
    the turn of its ``idempotencyKey``, a child session's into its parent's."""

    run: RunSummary
    current: dict[str, TurnSummary] = field(default_factory=dict)  # session → its turn in progress
    keyed: dict[tuple[str, str], TurnSummary] = field(default_factory=dict)
    retries: set[int] = field(default_factory=set)  # seqs of retried prompts
    parents: dict[str, str] = field(default_factory=dict)  # child session → parent
    sessions: dict[str, int] = field(default_factory=dict)

    def prompt(self, sid: str, key: Any, seq: int) -> None:
        again = self.keyed.get((sid, key)) if isinstance(key, str) else None
        if again is not None:  # a retry: the same turn (docs/protocol.md §13.3)
            again.retries.append(str(key))
            self.retries.add(seq)
            return
        n = self.sessions.setdefault(sid, len(self.sessions) + 1)
        turn = TurnSummary(f"turn {len(self.run.turns) + 1} (session {n})")
        self.run.turns.append(turn)
        self.current[sid] = turn
        if isinstance(key, str):
            self.keyed[(sid, key)] = turn

    def of(self, sid: str | None) -> TurnSummary:
        """The turn in progress of ``sid``, or of the nearest ancestor that has one: a
        child session's work is part of its parent's turn."""
        for _ in range(len(self.parents) + 1):
            if sid is None or sid in self.current:
                break
            sid = self.parents.get(sid)
        return self.current.get(sid, self.run.setup) if sid is not None else self.run.setup


def summarise_run(
    messages: Sequence[ReplayMessage],
    *,
    ignore: Sequence[tuple[str, ...]] = (),
    mapper: Mapper | None = None,
    detail: bool = False,
    client_eof_ns: int | None = None,
) -> RunSummary:
    """Fold a run into a :class:`RunSummary`. ``mapper`` brings a replayed run's paths back
    to the recording's terms (``to_recorded``); ``detail`` adds the facets of
    :class:`~acp_proxy.replay.core.summary.Detail`. What the agent announced after the client
    closed its stdin (``client_eof_ns``) raced the client's end: it is not required of
    another run."""
    by_seq = {m.seq: m for m in messages}
    run = RunSummary()
    run.eof_ns = client_eof_ns
    turns = _Turns(run)
    tools: dict[str, ToolSummary] = {}

    def value_of(m: ReplayMessage) -> Any:
        v = _strip(m.value, ignore)
        return mapper.to_recorded(v) if mapper is not None else v

    def session(m: ReplayMessage) -> str | None:
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
                turns.prompt(str(session(m)), params.get("idempotencyKey"), m.seq)
            elif m.kind == Kind.ERROR:
                asked = by_seq.get(m.partner) if m.partner is not None else None
                turn = turns.of(session(asked)) if asked else run.setup
                turn.errors.append(f"client answered {m.method} with {error_text(v)}")
            continue
        if m.partner in turns.retries and m.kind in (Kind.RESPONSE, Kind.ERROR):
            continue  # a retry's answer repeats the first one's
        pc = child_announced(v)
        if pc is not None:
            turns.parents.setdefault(pc[1], pc[0])
        _agent_message(m, v, params, turns.of(session(m)), run, tools)
    if detail:
        add_details(messages, run, value_of, by_seq, tools, turns.retries)
    return run


def _agent_message(
    m: ReplayMessage,
    v: dict[str, Any],
    params: dict[str, Any],
    turn: TurnSummary,
    run: RunSummary,
    tools: dict[str, ToolSummary],
) -> None:
    if m.kind == Kind.NOTIFICATION:
        _notification(m, params, turn, run, tools)
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
        turn.errors.append(f"{m.method} failed with {error_text(v)}")


def _announce(run: RunSummary, what: str, t_ns: int) -> None:
    late = run.eof_ns is not None and t_ns > run.eof_ns
    (run.announced_late if late else run.announced).add(what)


def _notification(
    m: ReplayMessage,
    params: dict[str, Any],
    turn: TurnSummary,
    run: RunSummary,
    tools: dict[str, ToolSummary],
) -> None:
    """An agent notification into its turn (or, when it is ambient, into what the run
    announced)."""
    update = params.get("update")
    if m.method == "session/update" and isinstance(update, dict):
        kind = str(update.get("sessionUpdate"))
        if kind in AMBIENT:
            _announce(run, kind, m.t_ns)
            return
        _event(turn, kind)
        _tool(update, kind, tools, turn)
        _files(update, run)
        if kind == "state_update" and update.get("state") == "idle":
            reason = update.get("stopReason")
            turn.stop_reason = str(reason) if reason is not None else None
    elif turn is run.setup and str(m.method).startswith("_"):
        _announce(run, str(m.method), m.t_ns)  # an extension's status, on its own time
    else:
        _event(turn, str(m.method))


def _event(turn: TurnSummary, name: str) -> None:
    if name.endswith("_chunk") and turn.events and turn.events[-1] == name:
        return
    turn.events.append(name)


def _tool(
    update: dict[str, Any], kind: str, tools: dict[str, ToolSummary], turn: TurnSummary
) -> None:
    if kind not in ("tool_call", "tool_call_update"):
        return
    tid = str(update.get("toolCallId"))
    call = tools.get(tid)
    if call is None:
        call = tools[tid] = ToolSummary()
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
    :class:`~acp_proxy.replay.core.summary.Detail` facets too, when both summaries have them)."""
    out: list[Divergence] = []
    if recorded.setup.detail is not None and replayed.setup.detail is not None:
        out.extend(compare_detail(recorded.setup, replayed.setup))
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
            name = f"tool call {i + 1} {((ta or tb) or ToolSummary()).title!r}"
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
            out.extend(compare_detail(a, b))
            out.extend(compare_tool_detail(a, b))
        for op, i1, i2, j1, j2 in opcodes(a.events, b.events):
            if op != "equal":
                at = f"messages {i1 + 1}–{i2}" if i2 > i1 + 1 else f"message {i1 + 1}"
                if i2 == i1:
                    at = f"after message {i1}"
                out.append(Divergence(where, at, a.events[i1:i2], b.events[j1:j2]))
    missing = recorded.announced - replayed.announced - replayed.announced_late
    if missing:  # announcing more than the recording did is not a divergence: it may be cut
        out.append(Divergence("run", "announced", sorted(recorded.announced),
                              sorted(replayed.announced)))  # fmt: skip
    for path in sorted(set(recorded.files) | set(replayed.files)):
        fa, fb = recorded.files.get(path), replayed.files.get(path)
        if fa != fb:
            out.append(Divergence("files", f"written {path}", fa, fb))
    return out

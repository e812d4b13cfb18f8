"""Readable text for the reconstruction views.

What belongs here: turning a :class:`~acp_proxy.reconstruct.Reconstruction` into short lines for
``acp-proxy tools``, ``terminals``, ``diffs`` and the ``show`` views (turns, tools,
permissions). The JSON forms live in :mod:`acp_proxy.reconstruct.views`; this module only
formats, it never decides what happened.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Sequence
from typing import Any

import orjson

from acp_proxy import sgr
from acp_proxy.reconstruct import Reconstruction
from acp_proxy.reconstruct.terminals import Attrs
from acp_proxy.reconstruct.treeviews import tree_order
from acp_proxy.reconstruct.views import permission_json, turn_json
from acp_proxy.text.style import Painted, Styled, screen_line, sgr_of

__all__ = [
    "diffs_lines",
    "error_text",
    "files_lines",
    "permissions_lines",
    "sessions_lines",
    "terminals_lines",
    "tools_lines",
    "turns_lines",
]


_STDERR_SHOWN = 5
_AFTER_ERROR_NS = 2_000_000_000  # stderr this long after a turn failed still explains it


def _sgr_cells(cells: list[Attrs]) -> Iterator[tuple[str, str]]:
    for ch, fg, bg, bold, italics, underscore, reverse in cells:
        yield ch, sgr_of(fg, bg, bold, italics, underscore, reverse)


def _ms(t_ns: int | None) -> str:
    return "?" if t_ns is None else f"{t_ns / 1e6:.1f}ms"


def _short(value: Any, width: int = 70) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _content_label(item: Any) -> str:
    if not isinstance(item, dict):
        return "?"
    t = item.get("type")
    if t == "terminal":
        return f"terminal {item.get('terminalId')}"
    if t == "diff":
        if "changes" in item:
            ops = [
                f"{c.get('operation')} {c.get('path', '')}".strip()
                for c in item.get("changes") or []
                if isinstance(c, dict)
            ]
            return "diff " + ", ".join(ops)
        return f"diff {item.get('path')}"
    if t == "content":
        c = item.get("content")
        if isinstance(c, dict) and c.get("type") == "text":
            return "text " + repr(_short(str(c.get("text", "")), 50))
        return f"content <{c.get('type') if isinstance(c, dict) else '?'}>"
    # unknown content, shown generically (docs/protocol.md §7.2)
    return f"<{t}> " + _short(item, 50)


def tools_lines(r: Reconstruction) -> Iterator[str | Styled]:
    if not r.tool_calls:
        yield "no tool calls"
    yield from _tool_lines(r)
    yield from mcp_lines(r)


def _tool_lines(r: Reconstruction) -> Iterator[str | Styled]:
    for tc in r.tool_calls.values():
        ended = tc.ended_t_ns
        took = f"{(ended - tc.first_t_ns) / 1e6:.1f} ms" if ended is not None else "not finished"
        title = repr(tc.title) if tc.title is not None else "(no title)"
        yield Styled.of(
            f"{tc.tool_call_id}  {tc.kind}  ",
            (str(tc.status), "error" if tc.status == "failed" else None),
            f"  {title}  {took}  #{tc.first_seq}",
        )
        history = " → ".join(f"{c.status}@{_ms(c.t_ns)}" for c in tc.status_history)
        if history:
            yield f"    status   {history}"
        if tc.name:
            yield f"    name     {tc.name}"
        for item in tc.content:
            yield f"    content  {_content_label(item)}"
        for loc in tc.location_history:
            where = f"{loc.path}:{loc.line}" if loc.line is not None else str(loc.path)
            yield f"    location {where}  @{_ms(loc.t_ns)}"
        if tc.raw_input is not None:
            yield f"    input    {_short(tc.raw_input)}"
        if tc.raw_output is not None:
            yield f"    output   {_short(tc.raw_output)}"
        if tc.capabilities is not None:
            yield f"    can      {_short(tc.capabilities)}"
        if tc.meta:
            yield f"    _meta    {_short(tc.meta)}"
        for linked in tc.session_ids:
            yield f"    session  {linked} (the session it ran: show --view sessions)"
        for a in tc.anomalies:
            yield Styled.of(("    !" + a, "anomaly"))


def terminals_lines(r: Reconstruction, colour: bool = False) -> Iterator[str | Styled]:
    if not r.terminals:
        yield "no terminals"
        return
    for t in r.terminals.values():
        cmd = " ".join([t.command or "?", *(shlex.quote(str(a)) for a in t.args)])
        es = t.exit_status
        if es is None:
            status = "running" if not t.released else "released"
        elif es.get("signal"):
            status = f"killed by {es.get('signal')}"
        else:
            status = f"exit {es.get('exitCode')}"
        owner = "agent-owned" if t.owner == "agent" else "client-owned"
        bad = es is not None and (bool(es.get("signal")) or es.get("exitCode") not in (0, None))
        yield Styled.of(
            (f"terminal {t.terminal_id}", "bold"),
            f"  ({owner}, session {t.session_id})  ",
            (status, "error" if bad else None),
        )
        yield from _command_lines(cmd)
        if t.cwd:
            yield f"    cwd {t.cwd}"
        if t.tool_call_ids:
            yield f"    tool calls {', '.join(t.tool_call_ids)}"
        extra = []
        if t.truncated:
            extra.append("output truncated by the client")
        if t.size:
            extra.append(f"size {t.size.get('cols')}x{t.size.get('rows')}")
        extra.append(f"{len(t.output)} bytes")
        yield "    " + ", ".join(extra)
        if t.screen_note:
            yield f"    ({t.screen_note})"
        if colour:  # the screen's colours, re-emitted from the emulator's cell attributes
            for cells in t.screen_cells():
                yield Painted("    │ " + screen_line(_sgr_cells(cells), True))
            continue
        for line in t.screen():
            yield f"    │ {line}"


_COMMAND_LINES = 12


def _command_lines(cmd: str) -> Iterator[str]:
    """A terminal's command as it would read in a shell: its own lines kept (a script given
    to ``bash -c`` is several), the first after ``$``, the others after ``>``."""
    lines = cmd.splitlines() or [""]
    for i, line in enumerate(lines[:_COMMAND_LINES]):
        text = line if len(line) <= 200 else line[:199] + "…"
        yield f"    {'$' if i == 0 else '>'} {text}"
    if len(lines) > _COMMAND_LINES:
        yield f"    ({len(lines) - _COMMAND_LINES} more lines: terminals --json)"


def diffs_lines(r: Reconstruction) -> Iterator[str]:
    if not r.files.changes:
        yield "no file changes"
        return
    listed: set[int] = set()
    for c in r.files.changes:
        if c.applies is not None and c.applies in listed:  # one change, shown once
            how = "refused by the client" if c.ok is False else "done" if c.ok else "unanswered"
            yield f"    applied by #{c.seq} fs/write_text_file ({how})"
            continue
        listed.add(c.seq)
        where = f"{c.old_path} → {c.path}" if c.old_path else str(c.path)
        flags = []
        if c.stale:
            flags.append("STALE: old text differs from the last known content")
        if c.ok is False:
            flags.append("write refused by the client")
        by = f"tool call {c.tool_call_id}" if c.tool_call_id else c.source
        kind = f" {c.file_type}" if c.file_type and c.file_type != "text" else ""
        yield f"#{c.seq} {c.operation}{kind} {where}  ({by})" + "".join(f"  !{f}" for f in flags)
        if c.patch:
            for line in c.patch.splitlines():
                yield f"    {line}"
        else:
            yield "    (no patch text)"


def turns_lines(
    r: Reconstruction,
    cut_short: str | None = None,
    stderr: Sequence[tuple[int, bytes]] = (),
) -> Iterator[str | Styled]:
    """The turns; with ``cut_short`` (why the capture ended), an unanswered turn says why
    it was cut short, and the agent's stderr during a turn is shown under it."""
    if not r.turns:
        yield "no turns"
    for turn in r.turns:
        t = turn_json(r, turn)
        style = None
        if t["stopReason"]:
            end = t["stopReason"]
        elif t["error"]:
            end, style = f"error {error_text(t['error'])}", "error"
        elif cut_short is not None:
            end, style = f"cut short: {cut_short} before answering", "error"
        else:
            end = "still open"
        dur = f"{t['durationMs']:.1f} ms" if t["durationMs"] is not None else "-"
        yield Styled.of(
            f"turn {t['index']}  #{t['seq']}  {t['sessionId']}  ", (end, style), f"  {dur}"
        )
        yield f"    prompt  {_short(t['prompt'])!r}"
        first = t["timeToFirstOutputMs"]
        yield (
            f"    first output {first if first is not None else '-'} ms, tools "
            f"{t['toolTimeMs']} ms, permission wait {t['permissionWaitMs']} ms, "
            f"{t['updates']} updates"
        )
        if t["cancelSeq"] is not None:
            yield f"    cancelled at #{t['cancelSeq']}, stopped {t['cancelToStopMs']} ms later"
        if t["toolCallIds"]:
            yield f"    tool calls {', '.join(t['toolCallIds'])}"
        if t["agentText"]:
            yield f"    agent   {_short(t['agentText'], 90)!r}"
        end_ns = turn.ended_t_ns
        if end_ns is not None and t["error"]:
            # an agent often explains a failure on stderr just after it answered: stderr and
            # stdout are two pipes, read apart
            end_ns += _AFTER_ERROR_NS
            later = [x.t_ns for x in r.turns if x.t_ns > turn.t_ns]
            end_ns = min([end_ns, *later])
        said = [
            line
            for t_ns, data in stderr
            if t_ns >= turn.t_ns and (end_ns is None or t_ns <= end_ns)
            for line in data.decode("utf-8", "replace").splitlines()
            if line.strip()
        ]
        for line in said[-_STDERR_SHOWN:]:
            yield Styled.of("    stderr  ", *sgr.parts(line, "stderr"))
        if len(said) > _STDERR_SHOWN:
            yield f"    stderr  ({len(said) - _STDERR_SHOWN} earlier lines: acp-proxy show)"


def error_text(error: Any, width: int = 160) -> str:
    """A JSON-RPC error as a person reads it: code, message, and what ``data`` says (an
    agent's ``Internal error`` usually explains itself only there)."""
    if not isinstance(error, dict):
        return _short(error, width)
    code, message, data = error.get("code"), error.get("message"), error.get("data")
    text = " ".join(str(x) for x in (code, message) if x is not None)
    detail = None
    if isinstance(data, dict):
        detail = next((data[k] for k in ("message", "details", "error", "reason")
                       if isinstance(data.get(k), str) and data[k]), None)  # fmt: skip
        detail = detail if detail is not None else (_short(data, width) if data else None)
    elif data is not None:
        detail = data if isinstance(data, str) else _short(data, width)
    if detail and detail != message:
        text += f": {detail}"
    return _short(text, width) if len(text) > width else text


def permissions_lines(r: Reconstruction) -> Iterator[str]:
    if not r.permissions:
        yield "no permission requests"
    for p in r.permissions:
        j = permission_json(p)
        if j["answeredSeq"] is None:
            answer = "unanswered"
        elif j["error"] is not None:
            answer = f"error {j['error'].get('code') if isinstance(j['error'], dict) else ''}"
        elif j["outcome"] == "selected":
            answer = f"selected {j['optionId']} ({j['optionKind']})"
        else:
            answer = str(j["outcome"])
        verdict = {True: "approved", False: "not approved", None: "pending"}[j["approved"]]
        wait = f"{j['waitMs']} ms" if j["waitMs"] is not None else "-"
        yield f"#{j['seq']} {j['title']!r}  {answer}  {verdict}  waited {wait}"
        opts = ", ".join(
            f"{o.get('optionId')}:{o.get('kind')}" for o in j["options"] if isinstance(o, dict)
        )
        yield f"    options {opts}"
        if j["toolCallId"]:
            yield f"    tool call {j['toolCallId']}"
        if isinstance(j["subject"], dict):
            yield f"    subject {_short(j['subject'])}"


def sessions_lines(r: Reconstruction) -> Iterator[str]:
    if r.protocol_version is not None:
        yield f"ACP protocol v{r.protocol_version}"
    if not r.sessions:
        yield "no sessions"
    for sid in tree_order(r):
        s = r.sessions[sid]
        sub = r.subagents.get(sid)
        depth, parent = 0, sub.parent_id if sub is not None else None
        while parent is not None and depth < 8:  # each child under its parent
            depth += 1
            up = r.subagents.get(parent)
            parent = up.parent_id if up is not None else None
        pad = "  " * depth
        head = f"{pad}session {s.session_id}" if sub is None else f"{pad}└ child {s.session_id}"
        yield head + f"  cwd {s.cwd or '?'}" + (f"  title {s.title!r}" if s.title else "")
        if sub is not None:
            yield f"{pad}    subagent of {sub.parent_id}: {_short(sub.fields)}"
        for x in r.replays:
            if x.session_id == sid:
                end = "complete" if x.complete else "TRUNCATED" if x.truncated else "open"
                yield f"{pad}    history {x.method} #{x.request_seq}: {x.updates} updates, {end}"
        for m in r.session_messages.values():
            if m.session_id == sid:
                yield f"{pad}    message {m.sender} → {m.recipient}: {_short(m.text)}"
        for c in s.mode_history:
            yield f"{pad}    mode    {c.value}  ({c.source}, #{c.seq})"
        for c in s.config_history:
            values = [
                f"{o.get('id')}={o.get('currentValue')}" for o in c.value if isinstance(o, dict)
            ]
            yield f"{pad}    config  {', '.join(values)}  ({c.source}, #{c.seq})"
        if s.plan is not None:
            yield f"{pad}    plan    {len(s.plan)} entries"
            for e in s.plan:
                if isinstance(e, dict):
                    yield f"{pad}      [{e.get('status')}] {e.get('content')} ({e.get('priority')})"
        for pid, plan in s.plans.items():
            yield f"{pad}    plan {pid}  {_short(plan)}"
        if s.usage is not None:
            yield f"{pad}    usage   {_short(s.usage)}"
        if s.state is not None:
            yield f"{pad}    state   {s.state}"
        for kind, n in s.unknown_updates.items():
            yield f"{pad}    update  {kind} ×{n} (not understood, kept)"


def mcp_lines(r: Reconstruction) -> Iterator[str]:
    """MCP calls carried over ACP (docs/protocol.md §13.5), after the tool calls."""
    for c in r.mcp.calls:
        what = f"{c.method} {c.tool}" if c.tool is not None else c.method
        args = f" {_short(c.arguments, 50)}" if c.arguments is not None else ""
        if c.error is not None:
            outcome = f"error {_short(c.error, 50)}"
        elif c.response_seq is None:
            outcome = "no answer" if c.method not in ("disconnect",) else ""
        else:
            outcome = f"→ {_short(c.result, 50)}"
        yield f"mcp {c.server or '?'} {what}{args}  {outcome}  (#{c.seq}, {c.caller})".rstrip()


def _state(exists: bool | None, content: str | None) -> str:
    if exists is None:
        return "unknown"
    if not exists:
        return "absent"
    if content is None:
        return "exists, content unknown"
    return f"{len(content)} chars, {content.count(chr(10))} lines"


def files_lines(r: Reconstruction) -> Iterator[str]:
    if not r.files.paths:
        yield "no files"
    for h in r.files.paths.values():
        yield h.path
        yield f"    start   {_state(h.start_exists, h.start_content)}"
        for v in h.versions:
            flags = "".join(
                f"  !{name}" for name, on in (("stale", v.stale), ("diverged", v.diverged)) if on
            )
            part = " (part)" if v.partial else ""
            by = f" by {v.tool_call_id}" if v.tool_call_id else ""
            yield (
                f"    #{v.seq:<5} {v.operation:<9} {v.source}{by}{part}  → "
                f"{_state(v.exists, v.content)}{flags}"
            )
        yield f"    now     {_state(h.exists, h.content)}"

"""The sections of the page above the frames: one function per view, returning its HTML.

What belongs here: laying out what the views compute (turns, tool calls with their
content, permissions, plans, terminals, file changes, the agent's stderr, the events,
what ``acp-proxy check`` found), each as a heading and a table or cards, nothing when the
view is empty.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from typing import Any

from acp_proxy.check.core.findings import Finding
from acp_proxy.events import describe, is_bad
from acp_proxy.export.html.screen import screen_html
from acp_proxy.export.html.style import esc, link, patch_html
from acp_proxy.text.log import log_entries
from acp_proxy.text.timeline import event_detail

_STDERR_SHOWN = 1024 * 1024


def turns_html(turns: list[dict[str, Any]], shown: range, cut_short: str | None) -> list[str]:
    if not turns:
        return []
    rows = [
        "<h2>Turns</h2><table><tr><th>#</th><th>frame</th><th>prompt</th><th>stop</th>"
        "<th>duration</th><th>first output</th><th>tools</th><th>permission wait</th>"
        "<th>agent said</th></tr>"
    ]
    for t in turns:
        cancel = " (cancelled)" if t.get("cancelled") and t.get("stopReason") != "cancelled" else ""
        retries = t.get("retries") or []
        if retries:  # one turn, its prompt sent again with its idempotencyKey
            seqs = ", ".join(link(x.get("seq"), shown) for x in retries)
            cancel += f" (retried {len(retries)}×: {seqs})"
        stop = esc(t.get("stopReason"))
        bad = False
        if t.get("endedSeq") is None:
            bad = True
            stop = esc(f"cut short: {cut_short} before answering" if cut_short else "still open")
        elif t.get("error") is not None:
            bad, stop = True, "error"
        ended = f" → {link(t['endedSeq'], shown)}" if t.get("endedSeq") is not None else ""
        rows.append(
            f"<tr{' class=err' if bad else ''}><td class=num>{t['index']}</td>"
            f"<td class=num>{link(t['seq'], shown)}{ended}</td><td>{esc(t.get('prompt'))}</td>"
            f"<td>{stop}{cancel}</td>"
            f"<td class=num>{esc(t.get('durationMs'))} ms</td>"
            f"<td class=num>{esc(t.get('timeToFirstOutputMs'))} ms</td>"
            f"<td class=num>{esc(t.get('toolTimeMs'))} ms</td>"
            f"<td class=num>{esc(t.get('permissionWaitMs'))} ms</td>"
            f"<td>{esc(t.get('agentText'))}</td></tr>"
        )
    rows.append("</table>")
    return rows


def _content_html(
    item: Any, tool_call_id: Any, diffs: list[dict[str, Any]], terms: dict[Any, dict[str, Any]]
) -> str:
    """One item of a tool call's content: a diff as a patch, text, a terminal's screen."""
    if not isinstance(item, dict):
        return f"<pre>{esc(item)}</pre>"
    kind = item.get("type")
    if kind == "diff":
        paths = {c.get("path") for c in item.get("changes") or [] if isinstance(c, dict)}
        paths.add(item.get("path"))
        patches = [
            d for d in diffs if d.get("toolCallId") == tool_call_id and d.get("path") in paths
        ]
        body = "".join(f"<pre>{patch_html(d['patch'])}</pre>" for d in patches if d.get("patch"))
        return (
            f"<div><span class=muted>diff</span> <code>{esc(item.get('path'))}</code>{body}</div>"
        )
    if kind == "content":
        c = item.get("content")
        if isinstance(c, dict) and c.get("type") == "text":
            return f"<pre>{esc(c.get('text'))}</pre>"
        return f"<div class=muted>content {esc(c.get('type') if isinstance(c, dict) else c)}</div>"
    if kind == "terminal":
        t = terms.get(item.get("terminalId"))
        if t is None:
            return f"<div class=muted>terminal <code>{esc(item.get('terminalId'))}</code></div>"
        return (
            f"<div><span class=muted>terminal</span> <code>$ {esc(_command(t))}</code>"
            f'<pre class="screen">{screen_html(t.get("text") or "", t.get("size"))}</pre></div>'
        )
    return f"<div class=muted>{esc(kind)}</div>"


def tools_html(
    tools: list[dict[str, Any]],
    diffs: list[dict[str, Any]],
    terms: dict[Any, dict[str, Any]],
    shown: range,
) -> list[str]:
    if not tools:
        return []
    out = ["<h2>Tool calls</h2>"]
    for t in tools:
        history = " → ".join(
            f"{esc(h.get('status'))} <span class=muted>{link(h.get('seq'), shown)} "
            f"@{esc(h.get('t_ms'))} ms</span>"
            for h in t.get("statusHistory") or []
        )
        failed = t.get("status") == "failed"
        out.append(
            f"<div class=card><b{' class=err' if failed else ''}>{esc(t.get('title'))}</b> "
            f"<code>{esc(t.get('toolCallId'))}</code> <span class=muted>{esc(t.get('kind'))} · "
            f"from {link(t.get('firstSeq'), shown)}</span><br>{history}"
            + "".join(
                f"<br><span class=muted>location:</span> <code>{esc(loc.get('path'))}"
                f"{':' + esc(loc['line']) if loc.get('line') else ''}</code>"
                for loc in t.get("locations") or []
                if isinstance(loc, dict)
            )
            + "".join(
                _content_html(c, t.get("toolCallId"), diffs, terms) for c in t.get("content") or []
            )
            + "".join(f"<br><span class=odd>{esc(a)}</span>" for a in t.get("anomalies") or [])
            + "</div>"
        )
    return out


def permissions_html(perms: list[dict[str, Any]], shown: range) -> list[str]:
    if not perms:
        return []
    out = [
        "<h2>Permissions</h2><table><tr><th>frame</th><th>title</th><th>options</th>"
        "<th>answer</th><th>waited</th></tr>"
    ]
    for p in perms:
        if p.get("answeredSeq") is None:
            answer, cls = "unanswered", "err"
        elif p.get("error") is not None:
            answer, cls = "error", "err"
        elif p.get("outcome") == "selected":
            answer = f"selected {p.get('optionId')} ({p.get('optionKind')})"
            cls = "" if p.get("approved") else "denied"
        else:
            answer, cls = str(p.get("outcome")), "denied"
        opts = ", ".join(
            f"{o.get('optionId')}:{o.get('kind')}"
            for o in p.get("options") or []
            if isinstance(o, dict)
        )
        out.append(
            f"<tr><td class=num>{link(p.get('seq'), shown)}</td><td>{esc(p.get('title'))}</td>"
            f"<td>{esc(opts)}</td><td class={cls or 'plain'}>{esc(answer)}</td>"
            f"<td class=num>{esc(p.get('waitMs'))} ms</td></tr>"
        )
    out.append("</table>")
    return out


def plans_html(sessions: list[dict[str, Any]]) -> list[str]:
    out = []
    for s in sessions:
        plans = [("", s.get("plan"))] if s.get("plan") is not None else []
        plans += [(f" {pid}", p) for pid, p in (s.get("plans") or {}).items()]
        for name, plan in plans:
            entries = plan if isinstance(plan, list) else (plan or {}).get("entries", [])
            items = "".join(
                f"<tr><td>{esc(e.get('status'))}</td><td>{esc(e.get('content'))}</td>"
                f"<td>{esc(e.get('priority'))}</td></tr>"
                for e in entries or []
                if isinstance(e, dict)
            )
            out.append(
                f"<div class=card>session <code>{esc(s.get('sessionId'))}</code>{esc(name)}"
                f"<table><tr><th>status</th><th>step</th><th>priority</th></tr>{items}</table>"
                "</div>"
            )
    return ["<h2>Plan</h2>", *out] if out else []


def _command(t: dict[str, Any]) -> str:
    words = [str(t.get("command") or "?"), *(str(a) for a in t.get("args") or [])]
    return " ".join(shlex.quote(w) if w != words[0] else w for w in words)


def terminals_html(terminals: list[dict[str, Any]], shown: range) -> list[str]:
    if not terminals:
        return []
    out = ["<h2>Terminals</h2>"]
    for t in terminals:
        status = t.get("exitStatus")
        ended = (
            "running or unknown"
            if not status
            else f"exit {status.get('exitCode')}"
            + (f" signal {status['signal']}" if status.get("signal") else "")
        )
        out.append(
            f"<div class=card><code>{esc(t.get('terminalId'))}</code> "
            f"<code>$ {esc(_command(t))}</code> <span class=muted>{esc(t.get('cwd'))} · "
            f"{esc(ended)} · from {link(t.get('firstSeq'), shown)} · tool calls "
            f"{esc(', '.join(map(str, t.get('toolCallIds') or [])))}</span>"
            f'<pre class="screen">{screen_html(t.get("text") or "", t.get("size"))}</pre></div>'
        )
    return out


def diffs_html(diffs: list[dict[str, Any]], shown: range) -> list[str]:
    if not diffs:
        return []
    out = ["<h2>File changes</h2>"]
    listed: dict[Any, int] = {}
    for d in diffs:
        if d.get("applies") is not None and d["applies"] in listed:  # one change, once
            ok = d.get("ok")
            how = "done" if ok is True else "refused by the client" if ok is False else "unanswered"
            out[listed[d["applies"]]] = out[listed[d["applies"]]].replace(
                "</div>", f"<p class=muted>applied by {link(d.get('seq'), shown)} "
                f"fs/write_text_file ({esc(how)})</p></div>")  # fmt: skip
            continue
        listed[d.get("seq")] = len(out)
        head = (
            f"{link(d.get('seq'), shown)} {esc(d.get('operation'))} "
            f"<code>{esc(d.get('path'))}</code>"
            + (f" from <code>{esc(d['oldPath'])}</code>" if d.get("oldPath") else "")
            + f" <span class=muted>{esc(d.get('source'))}"
            + (f", tool call {esc(d['toolCallId'])}" if d.get("toolCallId") else "")
            + ("</span> <span class=odd>stale edit</span>" if d.get("stale") else "</span>")
        )
        body = f"<pre>{patch_html(d['patch'])}</pre>" if d.get("patch") else ""
        out.append(f"<div class=card>{head}{body}</div>")
    return out


def stderr_html(chunks: Iterable[tuple[int, bytes]]) -> list[str]:
    """The agent's stderr, line by line, in its own colours (our classes, never its
    bytes); the first ``_STDERR_SHOWN`` bytes, then how to see the rest."""
    kept: list[tuple[int, bytes]] = []
    size = more = 0
    for t_ns, data in chunks:
        if size >= _STDERR_SHOWN:
            more += len(data)
            continue
        size += len(data)
        kept.append((t_ns, data))
    lines = [
        f"<span class=muted>{e['t_ms']:>10.3f} ms</span>  {_pieces(e['pieces'])}"
        for e in log_entries(kept, [])
    ]
    if not lines:
        return []
    note = f"\n… {more} more bytes (acp-proxy show --stderr has them all)" if more else ""
    return ["<h2>Agent stderr</h2>", f"<pre class=stderr>{chr(10).join(lines)}{esc(note)}</pre>"]


def _pieces(pieces: list[dict[str, Any]]) -> str:
    return "".join(
        f'<span class="{" ".join(p["classes"])}">{esc(p["text"])}</span>'
        if p["classes"]
        else esc(p["text"])
        for p in pieces
    )


def events_html(events: list[dict[str, Any]]) -> list[str]:
    """The events, each as its readable line, with its detail one click away."""
    if not events:
        return []
    out = ["<h2>Events</h2><table><tr><th>t (ms)</th><th>event</th><th>what happened</th></tr>"]
    for ev in events:
        kind = str(ev.get("kind") or "event")
        line = describe(kind, event_detail(ev))
        bad = is_bad(kind) or (kind == "exit" and not line.startswith("agent exited 0"))
        detail = ev.get("detail")
        more = (
            f"<details><summary>detail</summary><code>{esc(detail)}</code></details>"
            if detail
            else ""
        )
        out.append(
            f"<tr{' class=err' if bad else ''}><td class=num>{ev['t_ns'] / 1e6:.3f}</td>"
            f"<td>{esc(kind)}</td><td>{esc(line)}{more}</td></tr>"
        )
    out.append("</table>")
    return out


def conformance_html(found: list[Finding], counts: dict[str, int] | None = None) -> list[str]:
    """What ``acp-proxy check`` found, by rule (nothing when it found nothing)."""
    if not found:
        return []
    rules: dict[str, list[Finding]] = {}
    for f in found:
        rules.setdefault(f.rule, []).append(f)
    rows = "".join(
        f"<tr><td>{esc(fs[0].severity)}</td><td><code>{esc(rule)}</code></td>"
        f"<td class=num>{(counts or {}).get(rule, len(fs))}</td>"
        f"<td>{esc(', '.join(sorted({f.side for f in fs})))}</td>"
        f"<td>{esc(', '.join(str(f.seq) for f in fs[:20] if f.seq is not None))}</td>"
        f"<td>{esc(fs[0].spec)}</td></tr>"
        for rule, fs in sorted(rules.items())
    )
    return [
        "<h2>Conformance</h2><table><tr><th>severity</th><th>rule</th><th>findings</th>"
        f"<th>side</th><th>frames</th><th>spec</th></tr>{rows}</table>"
    ]

"""A capture as one self-contained HTML page, to open in a browser.

What belongs here: laying out what the other views already compute — the capture, its turns,
tool calls with their content (diffs, text, terminals), permissions, the plan, terminals as
their screens showed them (in their colours), file changes as patches, the agent's stderr,
the events, and the frame timeline with every frame's exact text one click away — as static
HTML with inline CSS. No scripts, no external resources: the file can be attached to a bug
report and read offline. Everything from the wire is escaped, and the page's
Content-Security-Policy (:data:`CSP`) makes the browser refuse what escaping would have let
through anyway: any script, any load from anywhere, any style but our own stylesheet
(allowed by its hash), forms and ``<base>``. Links are fragments within the page only.

Big captures stay a page a browser opens in seconds: the page is written as it is read
(:func:`write_html`, frames from a cursor, never all in memory), runs of message chunks
collapse into one row, each frame shows at most :data:`RAW_SHOWN` bytes, and at most
``max_frames`` frames are laid out — the page says how to see the rest (the next page with
``--from``).
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import shlex
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any

from acp_proxy.check.rules import Finding
from acp_proxy.check.source import by_seq
from acp_proxy.reconstruct import Reconstruction, reconstruct
from acp_proxy.reconstruct.terminals import Attrs, render_cells
from acp_proxy.reconstruct.views import (
    diffs_json,
    permissions_json,
    sessions_json,
    terminals_json,
    tools_json,
    turns_json,
)
from acp_proxy.store.reader import Store, StoredFrame
from acp_proxy.text.captures import capture_row
from acp_proxy.text.summary import summary

__all__ = [
    "CSP",
    "DEFAULT_MAX_FRAMES",
    "RAW_SHOWN",
    "render_html",
    "write_capture_html",
    "write_html",
]

RAW_SHOWN = 16 * 1024
_RAW_BUDGET = 32 * 1024 * 1024  # bytes of frame text on one page, all frames together
DEFAULT_MAX_FRAMES = 5000
_RUN_KINDS = frozenset({"agent_message_chunk", "agent_thought_chunk", "user_message_chunk"})
_RUN_MIN = 3
_RUN_MAX = 2000
_STDERR_SHOWN = 1024 * 1024

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2430;background:#f6f7f9}
header{background:#1d2430;color:#fff;padding:16px 24px}
header h1{font-size:18px;margin:0 0 4px} header p{margin:2px 0;color:#c9d1dc}
main{padding:8px 24px 48px} h2{font-size:16px;margin:28px 0 8px}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #e3e6ea;vertical-align:top}
th{background:#eef0f3;font-weight:600;position:sticky;top:0}
td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
code,pre{font:12px/1.4 ui-monospace,Menlo,Consolas,monospace}
pre{background:#fff;border:1px solid #e3e6ea;padding:8px;overflow:auto;margin:4px 0;
white-space:pre-wrap;overflow-wrap:anywhere;max-height:40em}
td{overflow-wrap:anywhere} table{table-layout:auto}
pre.screen{background:#111;color:#e6e6e6;border-color:#111;white-space:pre;overflow:auto}
tr.err td{background:#fdecea} tr.run td{background:#f3f6fb} .err{color:#b42318}
.denied{color:#8e2a8e;font-weight:600} a{color:inherit}
.sb{font-weight:700} .si{font-style:italic} .su{text-decoration:underline}
.f0{color:#000}.f1{color:#c23621}.f2{color:#25bc24}.f3{color:#adad27}.f4{color:#492ee1}
.f5{color:#d338d3}.f6{color:#33bbc8}.f7{color:#cbcccd}.f8{color:#818383}.f9{color:#fc391f}
.f10{color:#31e722}.f11{color:#eaec23}.f12{color:#5833ff}.f13{color:#f935f8}
.f14{color:#14f0f0}.f15{color:#e9ebeb}
.b0{background:#000}.b1{background:#c23621}.b2{background:#25bc24}.b3{background:#adad27}
.b4{background:#492ee1}.b5{background:#d338d3}.b6{background:#33bbc8}.b7{background:#cbcccd}
.b8{background:#818383}.b9{background:#fc391f}.b10{background:#31e722}
.b11{background:#eaec23}.b12{background:#5833ff}.b13{background:#f935f8}
.b14{background:#14f0f0}.b15{background:#e9ebeb}
.c2a{color:#0a5bd8} .a2c{color:#0b7a3e} .odd{color:#b42318;font-weight:600}
.add{color:#0b7a3e} .del{color:#b42318} .hunk{color:#6b4fbb}
details summary{cursor:pointer;color:#4a5563} .card{background:#fff;border:1px solid #e3e6ea;
padding:8px 12px;margin:8px 0} .muted{color:#6b7380}
"""

_CSS_HASH = base64.b64encode(hashlib.sha256(_CSS.encode()).digest()).decode()
CSP = f"default-src 'none'; style-src 'sha256-{_CSS_HASH}'; base-uri 'none'; form-action 'none'"


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _patch(text: str) -> str:
    out = []
    for line in text.splitlines():
        cls = ""
        if line.startswith("+") and not line.startswith("+++"):
            cls = "add"
        elif line.startswith("-") and not line.startswith("---"):
            cls = "del"
        elif line.startswith("@@"):
            cls = "hunk"
        out.append(f'<span class="{cls}">{_e(line)}</span>' if cls else _e(line))
    return "\n".join(out)


_PALETTE = [
    (0, 0, 0), (194, 54, 33), (37, 188, 36), (173, 173, 39), (73, 46, 225), (211, 56, 211),
    (51, 187, 200), (203, 204, 205), (129, 131, 131), (252, 57, 31), (49, 231, 34),
    (234, 236, 35), (88, 51, 255), (249, 53, 248), (20, 240, 240), (233, 235, 235),
]  # fmt: skip
_NAMES = ["black", "red", "green", "brown", "blue", "magenta", "cyan", "white"]


def _palette_index(value: str) -> int | None:
    """One of the 16 classes for an emulator colour value (a name or ``rrggbb``)."""
    if value in _NAMES:
        return _NAMES.index(value)
    if value == "yellow":
        return 3
    if value.startswith("bright") and value[6:] in (*_NAMES, "yellow"):
        return 8 + (3 if value[6:] == "yellow" else _NAMES.index(value[6:]))
    if len(value) == 6:
        try:
            rgb = tuple(int(value[i : i + 2], 16) for i in (0, 2, 4))
        except ValueError:
            return None
        return min(range(16), key=lambda i: _distance(_PALETTE[i], rgb))
    return None


def _distance(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    return sum((x - y) ** 2 for x, y in zip(a, b, strict=True))


def _cell_classes(c: Attrs) -> str:
    _ch, fg, bg, bold, italics, underscore, reverse = c
    if reverse:
        fg, bg = (bg if bg != "default" else "black"), (fg if fg != "default" else "white")
    out = []
    f, b = _palette_index(fg), _palette_index(bg)
    if f is not None:
        out.append(f"f{f}")
    if b is not None:
        out.append(f"b{b}")
    for on, name in ((bold, "sb"), (italics, "si"), (underscore, "su")):
        if on:
            out.append(name)
    return " ".join(out)


def _screen_html(text: str, size: Any) -> str:
    """A terminal's screen in its colours: spans with our classes, made from the emulated
    cells' attributes (never the escape sequences the peer sent)."""
    cols = size.get("cols") if isinstance(size, dict) else None
    rows = size.get("rows") if isinstance(size, dict) else None
    lines = []
    for row in render_cells(text, cols if isinstance(cols, int) else None, rows):
        out: list[str] = []
        current: str | None = None
        run: list[str] = []
        for c in row:
            cls = _cell_classes(c)
            if cls != current and run:
                out.append(_span(current, "".join(run)))
                run = []
            current = cls
            run.append(c[0])
        if run:
            out.append(_span(current, "".join(run)))
        lines.append("".join(out))
    return "\n".join(lines)


def _span(cls: str | None, text: str) -> str:
    return f'<span class="{cls}">{_e(text)}</span>' if cls else _e(text)


def _link(seq: Any, shown: range) -> str:
    """``#seq``, a link to the frame's row when the page shows it."""
    if not isinstance(seq, int):
        return _e(seq)
    return f'<a href="#f{seq}">#{seq}</a>' if seq in shown else f"#{seq}"


def _raw_text(raw: bytes, limit: int = RAW_SHOWN) -> str:
    shown = raw[:limit]
    text = shown.decode("utf-8", errors="backslashreplace")
    if len(raw) > limit:
        text += f"\n… {len(raw) - limit} more bytes (acp-proxy export has them all)"
    return text


def _turns(turns: list[dict[str, Any]], shown: range, cut_short: str | None) -> list[str]:
    if not turns:
        return []
    rows = [
        "<h2>Turns</h2><table><tr><th>#</th><th>frame</th><th>prompt</th><th>stop</th>"
        "<th>duration</th><th>first output</th><th>tools</th><th>permission wait</th>"
        "<th>agent said</th></tr>"
    ]
    for t in turns:
        cancel = " (cancelled)" if t.get("cancelled") and t.get("stopReason") != "cancelled" else ""
        stop = _e(t.get("stopReason"))
        bad = False
        if t.get("endedSeq") is None:
            bad = True
            stop = _e(f"cut short: {cut_short} before answering" if cut_short else "still open")
        elif t.get("error") is not None:
            bad, stop = True, "error"
        ended = f" → {_link(t['endedSeq'], shown)}" if t.get("endedSeq") is not None else ""
        rows.append(
            f"<tr{' class=err' if bad else ''}><td class=num>{t['index']}</td>"
            f"<td class=num>{_link(t['seq'], shown)}{ended}</td><td>{_e(t.get('prompt'))}</td>"
            f"<td>{stop}{cancel}</td>"
            f"<td class=num>{_e(t.get('durationMs'))} ms</td>"
            f"<td class=num>{_e(t.get('timeToFirstOutputMs'))} ms</td>"
            f"<td class=num>{_e(t.get('toolTimeMs'))} ms</td>"
            f"<td class=num>{_e(t.get('permissionWaitMs'))} ms</td>"
            f"<td>{_e(t.get('agentText'))}</td></tr>"
        )
    rows.append("</table>")
    return rows


def _content_html(
    item: Any, tool_call_id: Any, diffs: list[dict[str, Any]], terms: dict[Any, dict[str, Any]]
) -> str:
    """One item of a tool call's content: a diff as a patch, text, a terminal's screen."""
    if not isinstance(item, dict):
        return f"<pre>{_e(item)}</pre>"
    kind = item.get("type")
    if kind == "diff":
        paths = {c.get("path") for c in item.get("changes") or [] if isinstance(c, dict)}
        paths.add(item.get("path"))
        patches = [
            d for d in diffs if d.get("toolCallId") == tool_call_id and d.get("path") in paths
        ]
        body = "".join(f"<pre>{_patch(d['patch'])}</pre>" for d in patches if d.get("patch"))
        return f"<div><span class=muted>diff</span> <code>{_e(item.get('path'))}</code>{body}</div>"
    if kind == "content":
        c = item.get("content")
        if isinstance(c, dict) and c.get("type") == "text":
            return f"<pre>{_e(c.get('text'))}</pre>"
        return f"<div class=muted>content {_e(c.get('type') if isinstance(c, dict) else c)}</div>"
    if kind == "terminal":
        t = terms.get(item.get("terminalId"))
        if t is None:
            return f"<div class=muted>terminal <code>{_e(item.get('terminalId'))}</code></div>"
        return (
            f"<div><span class=muted>terminal</span> <code>$ {_e(_command(t))}</code>"
            f'<pre class="screen">{_screen_html(t.get("text") or "", t.get("size"))}</pre></div>'
        )
    return f"<div class=muted>{_e(kind)}</div>"


def _tools(
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
            f"{_e(h.get('status'))} <span class=muted>{_link(h.get('seq'), shown)} "
            f"@{_e(h.get('t_ms'))} ms</span>"
            for h in t.get("statusHistory") or []
        )
        failed = t.get("status") == "failed"
        out.append(
            f"<div class=card><b{' class=err' if failed else ''}>{_e(t.get('title'))}</b> "
            f"<code>{_e(t.get('toolCallId'))}</code> <span class=muted>{_e(t.get('kind'))} · "
            f"from {_link(t.get('firstSeq'), shown)}</span><br>{history}"
            + "".join(
                f"<br><span class=muted>location:</span> <code>{_e(loc.get('path'))}"
                f"{':' + _e(loc['line']) if loc.get('line') else ''}</code>"
                for loc in t.get("locations") or []
                if isinstance(loc, dict)
            )
            + "".join(
                _content_html(c, t.get("toolCallId"), diffs, terms) for c in t.get("content") or []
            )
            + "".join(f"<br><span class=odd>{_e(a)}</span>" for a in t.get("anomalies") or [])
            + "</div>"
        )
    return out


def _permissions(perms: list[dict[str, Any]], shown: range) -> list[str]:
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
            f"<tr><td class=num>{_link(p.get('seq'), shown)}</td><td>{_e(p.get('title'))}</td>"
            f"<td>{_e(opts)}</td><td class={cls or 'plain'}>{_e(answer)}</td>"
            f"<td class=num>{_e(p.get('waitMs'))} ms</td></tr>"
        )
    out.append("</table>")
    return out


def _plans(sessions: list[dict[str, Any]]) -> list[str]:
    out = []
    for s in sessions:
        plans = [("", s.get("plan"))] if s.get("plan") is not None else []
        plans += [(f" {pid}", p) for pid, p in (s.get("plans") or {}).items()]
        for name, plan in plans:
            entries = plan if isinstance(plan, list) else (plan or {}).get("entries", [])
            items = "".join(
                f"<tr><td>{_e(e.get('status'))}</td><td>{_e(e.get('content'))}</td>"
                f"<td>{_e(e.get('priority'))}</td></tr>"
                for e in entries or []
                if isinstance(e, dict)
            )
            out.append(
                f"<div class=card>session <code>{_e(s.get('sessionId'))}</code>{_e(name)}"
                f"<table><tr><th>status</th><th>step</th><th>priority</th></tr>{items}</table>"
                "</div>"
            )
    return ["<h2>Plan</h2>", *out] if out else []


def _command(t: dict[str, Any]) -> str:
    words = [str(t.get("command") or "?"), *(str(a) for a in t.get("args") or [])]
    return " ".join(shlex.quote(w) if w != words[0] else w for w in words)


def _terminals(terminals: list[dict[str, Any]], shown: range) -> list[str]:
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
            f"<div class=card><code>{_e(t.get('terminalId'))}</code> "
            f"<code>$ {_e(_command(t))}</code> <span class=muted>{_e(t.get('cwd'))} · "
            f"{_e(ended)} · from {_link(t.get('firstSeq'), shown)} · tool calls "
            f"{_e(', '.join(map(str, t.get('toolCallIds') or [])))}</span>"
            f'<pre class="screen">{_screen_html(t.get("text") or "", t.get("size"))}</pre></div>'
        )
    return out


def _diffs(diffs: list[dict[str, Any]], shown: range) -> list[str]:
    if not diffs:
        return []
    out = ["<h2>File changes</h2>"]
    for d in diffs:
        head = (
            f"{_link(d.get('seq'), shown)} {_e(d.get('operation'))} "
            f"<code>{_e(d.get('path'))}</code>"
            + (f" from <code>{_e(d['oldPath'])}</code>" if d.get("oldPath") else "")
            + f" <span class=muted>{_e(d.get('source'))}"
            + (f", tool call {_e(d['toolCallId'])}" if d.get("toolCallId") else "")
            + ("</span> <span class=odd>stale edit</span>" if d.get("stale") else "</span>")
        )
        body = f"<pre>{_patch(d['patch'])}</pre>" if d.get("patch") else ""
        out.append(f"<div class=card>{head}{body}</div>")
    return out


def _stderr(chunks: Iterable[tuple[int, bytes]]) -> list[str]:
    lines: list[str] = []
    size = 0
    more = 0
    for t_ns, data in chunks:
        if size >= _STDERR_SHOWN:
            more += len(data)
            continue
        size += len(data)
        text = data.decode("utf-8", "backslashreplace")
        for line in text.splitlines():
            lines.append(f"<span class=muted>{t_ns / 1e6:>10.3f} ms</span>  {_e(line)}")
    if not lines:
        return []
    note = f"\n… {more} more bytes (acp-proxy show --stderr has them all)" if more else ""
    return ["<h2>Agent stderr</h2>", f"<pre>{chr(10).join(lines)}{_e(note)}</pre>"]


_BAD_EVENTS = {"refused", "upstream_refused", "upstream_failed", "spawn_failed", "gap"}


def _events(events: list[dict[str, Any]]) -> list[str]:
    if not events:
        return []
    out = ["<h2>Events</h2><table><tr><th>t (ms)</th><th>event</th><th>detail</th></tr>"]
    for ev in events:
        bad = ev.get("kind") in _BAD_EVENTS or (
            ev.get("kind") == "exit" and '"exit_code":0,' not in (ev.get("detail") or "")
        )
        out.append(
            f"<tr{' class=err' if bad else ''}><td class=num>{ev['t_ns'] / 1e6:.3f}</td>"
            f"<td>{_e(ev.get('kind'))}</td><td><code>{_e(ev.get('detail'))}</code></td></tr>"
        )
    out.append("</table>")
    return out


def _conformance(found: list[Finding]) -> list[str]:
    """What ``acp-proxy check`` found, by rule (nothing when it found nothing)."""
    if not found:
        return []
    rules: dict[str, list[Finding]] = {}
    for f in found:
        rules.setdefault(f.rule, []).append(f)
    rows = "".join(
        f"<tr><td>{_e(fs[0].severity)}</td><td><code>{_e(rule)}</code></td>"
        f"<td class=num>{len(fs)}</td><td>{_e(', '.join(sorted({f.side for f in fs})))}</td>"
        f"<td>{_e(', '.join(str(f.seq) for f in fs[:20] if f.seq is not None))}</td>"
        f"<td>{_e(fs[0].spec)}</td></tr>"
        for rule, fs in sorted(rules.items())
    )
    return [
        "<h2>Conformance</h2><table><tr><th>severity</th><th>rule</th><th>findings</th>"
        f"<th>side</th><th>frames</th><th>spec</th></tr>{rows}</table>"
    ]


def _marks(found: list[Finding] | None) -> str:
    if not found:
        return ""
    items = "".join(
        f"<br><code>{_e(f.severity)} {_e(f.rule)}</code> [{_e(f.side)}] {_e(f.message)}"
        for f in found
    )
    return f"<div class=odd>⚠ {len(found)} finding(s){items}</div>"


class _Rows:
    """The frames table, written as the frames are read: runs of message chunks collapse
    into one row; frame text is capped per frame and per page."""

    def __init__(self, out: IO[str], marks: dict[int, list[Finding]] | None = None) -> None:
        self.out = out
        self.marks = marks or {}
        self.run: list[StoredFrame] = []
        self.budget = _RAW_BUDGET

    def row(self, f: StoredFrame) -> str:
        d = f.direction.value
        label = f.update_kind or f.method or ""
        odd = f" <span class=odd>{_e(','.join(f.anomalies))}</span>" if f.anomalies else ""
        latency = f"{f.latency_ns / 1e6:.2f} ms" if f.latency_ns is not None else ""
        bad = f.kind == "error" or bool(f.anomalies)
        if self.budget > 0:
            text = _raw_text(f.raw)
            self.budget -= len(text)
            body = f"<pre>{_e(text)}</pre>"
        else:
            body = "<p class=muted>bytes not shown on this page (acp-proxy show --json)</p>"
        return (
            f'<tr id="f{f.seq}"{" class=err" if bad else ""}>'
            f"<td class=num>{f.frame.t_ns / 1e6:.3f}</td><td class=num>{f.seq}</td>"
            f'<td class="{d}">{_e(f.direction.arrow)}</td><td>{_e(f.kind)}</td>'
            f"<td>{_e(label)}</td><td><code>{_e(f.msg_id)}</code></td>"
            f"<td><details><summary>{_e(summary(f))}{odd}</summary>{body}</details>"
            f"{_marks(self.marks.get(f.seq))}</td>"
            f"<td class=num>{latency}</td></tr>\n"
        )

    def add(self, f: StoredFrame) -> None:
        if f.update_kind in _RUN_KINDS and not f.anomalies and f.seq not in self.marks:
            first = self.run[0] if self.run else None
            if first is None or (
                first.update_kind == f.update_kind
                and first.session_id == f.session_id
                and len(self.run) < _RUN_MAX
            ):
                self.run.append(f)
                return
        self.flush()
        if f.update_kind in _RUN_KINDS and not f.anomalies and f.seq not in self.marks:
            self.run.append(f)
        else:
            self.out.write(self.row(f))

    def flush(self) -> None:
        run, self.run = self.run, []
        if len(run) < _RUN_MIN:
            for f in run:
                self.out.write(self.row(f))
            return
        from acp_proxy.protocol.jsonrpc import decode

        text = []
        for f in run:
            v = decode(f.raw)
            p = v.get("params") if isinstance(v, dict) else None
            u = p.get("update") if isinstance(p, dict) else None
            c = u.get("content") if isinstance(u, dict) else None
            if isinstance(c, dict) and c.get("type") == "text":
                text.append(str(c.get("text", "")))
        said = "".join(text)
        said = said if len(said) <= 300 else said[:299] + "…"
        self.out.write(
            f'<tr class=run id="f{run[0].seq}"><td class=num>{run[0].frame.t_ns / 1e6:.3f}</td>'
            f"<td class=num>{run[0].seq}–{run[-1].seq}</td>"
            f'<td class="{run[0].direction.value}">{_e(run[0].direction.arrow)}</td>'
            f"<td>{len(run)}×</td><td>{_e(run[0].update_kind)}</td><td></td>"
            f"<td><details><summary>{_e(said)}</summary><table>"
        )
        for f in run:
            self.out.write(self.row(f))
        self.out.write("</table></details></td><td></td></tr>\n")


def write_capture_html(
    out: IO[str],
    store: Store,
    capture: dict[str, Any],
    *,
    from_seq: int = 0,
    max_frames: int = DEFAULT_MAX_FRAMES,
    progress: Callable[[int], None] = lambda n: None,
) -> int:
    """The page of a capture in the database, read from it as :func:`write_html` needs:
    what ``export --format html`` writes and the inspector's export button serves."""
    from acp_proxy.check.source import check_stored
    from acp_proxy.store.liveness import capture_state
    from acp_proxy.text.captures import cut_short

    cid = capture["id"]
    ended = capture_state(capture) != "recording"
    return write_html(
        out,
        capture,
        lambda: store.frames(cid, ended=ended),
        stderr=lambda: store.stderr(cid),
        events=store.events(cid),
        cut_short=cut_short(capture) if ended else None,
        from_seq=from_seq,
        max_frames=max_frames,
        progress=progress,
        findings=check_stored(store.frames(cid)),
    )


def write_html(
    out: IO[str],
    capture: dict[str, Any],
    frames: Callable[[], Iterable[StoredFrame]],
    *,
    stderr: Callable[[], Iterable[tuple[int, bytes]]] = lambda: (),
    events: Sequence[dict[str, Any]] = (),
    cut_short: str | None = None,
    from_seq: int = 0,
    max_frames: int = DEFAULT_MAX_FRAMES,
    progress: Callable[[int], None] = lambda n: None,
    findings: Iterable[Finding] | None = None,
) -> int:
    """Write the page for one capture to ``out``, reading the frames twice from
    ``frames()`` (the fold, then the table): nothing is held but what the views need.
    Returns the number of frames laid out in the table."""
    r: Reconstruction = reconstruct(f.frame for f in _ticking(frames(), progress))
    found = list(findings or ())
    c = capture_row(capture)
    last = r.last_seq if r.last_seq is not None else -1
    shown = range(from_seq, min(last + 1, from_seq + max_frames))
    name = c["id"] if c["id"] is not None else capture.get("source")
    peers = f"{c['client'] or '?'} ⇄ {c['agent'] or '?'}"
    version = f"ACP v{c['protocol_version']}" if c["protocol_version"] is not None else ""
    duration = "running" if c["duration_s"] is None else f"{c['duration_s']} s"
    terminals = terminals_json(r)
    diffs = diffs_json(r)
    head = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        f"<title>acp-proxy capture {_e(name)}</title><style>{_CSS}</style></head><body>",
        f"<header><h1>Capture {_e(name)} · {_e(c['transport'])} · {_e(c['agent_command'])}"
        f"</h1><p>{_e(peers)} {_e(version)}</p><p>started {_e(c['started_at'])} · "
        f"{_e(duration)} · {c['messages']} frames · {_e(c['status'])}"
        + (f" · label {_e(c['label'])}" if c.get("label") else "")
        + "</p></header><main>",
        *_turns(turns_json(r), shown, cut_short),
        *_tools(tools_json(r), diffs, {t["terminalId"]: t for t in terminals}, shown),
        *_permissions(permissions_json(r), shown),
        *_plans(sessions_json(r)),
        *_terminals(terminals, shown),
        *_diffs(diffs, shown),
        *_stderr(stderr()),
        *_events(list(events)),
        *_conformance(found),
    ]
    out.write("\n".join(head) + "\n")
    count = r.frames
    title = f"Frames ({count})"
    if shown.start > 0 or shown.stop <= last:
        title = f"Frames #{shown.start}–#{max(shown.stop - 1, shown.start)} of {count}"
    out.write(
        f"<h2>{_e(title)}</h2><table><tr><th>t (ms)</th><th>#</th><th></th>"
        "<th>kind</th><th>method / update</th><th>id</th><th>summary and bytes</th>"
        "<th>latency</th></tr>\n"
    )
    rows = _Rows(out, by_seq(found))
    n = 0
    for f in _ticking(frames(), progress):
        if f.seq < shown.start:
            continue
        if f.seq >= shown.stop:
            break
        rows.add(f)
        n += 1
    rows.flush()
    out.write("</table>\n")
    if shown.stop <= last:
        cid = capture["id"]
        out.write(
            f"<p class=card>{last + 1 - shown.stop} more frames are not on this page. "
            f"Next page: <code>acp-proxy export {cid} --format html --from {shown.stop} "
            f"-o next.html</code>; or in a terminal: <code>acp-proxy show {cid} --from "
            f"{shown.stop}</code></p>\n"
        )
    out.write("</main></body></html>\n")
    return n


def _ticking(
    items: Iterable[StoredFrame], progress: Callable[[int], None]
) -> Iterator[StoredFrame]:
    for item in items:
        progress(1)
        yield item


def render_html(capture: dict[str, Any], frames: Iterable[StoredFrame]) -> str:
    """The whole page for one capture, as a string (small captures, tests)."""
    stored = list(frames)
    buf = io.StringIO()
    write_html(buf, capture, lambda: stored)
    return buf.getvalue()

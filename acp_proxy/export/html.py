"""A capture as one self-contained HTML page, to open in a browser.

What belongs here: laying out what the other views already compute — the capture, its turns,
tool calls, terminals as their screens showed them, file changes as patches, and the frame
timeline with every frame's exact text one click away — as static HTML with inline CSS. No
scripts, no external resources: the file can be attached to a bug report and read offline.
Everything from the wire is escaped, and the page's Content-Security-Policy (:data:`CSP`)
makes the browser refuse what escaping would have let through anyway: any script, any load
from anywhere, any style but our own stylesheet (allowed by its hash), forms and ``<base>``.
"""

from __future__ import annotations

import base64
import hashlib
import html
from collections.abc import Iterable
from typing import Any

from acp_proxy.check.rules import Finding
from acp_proxy.check.source import by_seq
from acp_proxy.reconstruct import reconstruct
from acp_proxy.reconstruct.views import diffs_json, terminals_json, tools_json, turns_json
from acp_proxy.store.reader import StoredFrame
from acp_proxy.text.timeline import capture_row, summary

__all__ = ["CSP", "render_html"]

_RAW_SHOWN = 64 * 1024

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
pre{background:#fff;border:1px solid #e3e6ea;padding:8px;overflow:auto;margin:4px 0}
pre.screen{background:#111;color:#e6e6e6;border-color:#111}
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


def _raw_text(raw: bytes) -> str:
    shown = raw[:_RAW_SHOWN]
    text = shown.decode("utf-8", errors="backslashreplace")
    if len(raw) > _RAW_SHOWN:
        text += f"\n… {len(raw) - _RAW_SHOWN} more bytes (acp-proxy export has them all)"
    return text


def _turns(turns: list[dict[str, Any]]) -> list[str]:
    if not turns:
        return []
    rows = [
        "<h2>Turns</h2><table><tr><th>#</th><th>prompt</th><th>stop</th><th>duration</th>"
        "<th>first output</th><th>tools</th><th>permission wait</th><th>agent said</th></tr>"
    ]
    for t in turns:
        cancel = " (cancelled)" if t.get("cancelled") and t.get("stopReason") != "cancelled" else ""
        rows.append(
            f"<tr><td class=num>{t['index']}</td><td>{_e(t.get('prompt'))}</td>"
            f"<td>{_e(t.get('stopReason'))}{cancel}</td>"
            f"<td class=num>{_e(t.get('durationMs'))} ms</td>"
            f"<td class=num>{_e(t.get('timeToFirstOutputMs'))} ms</td>"
            f"<td class=num>{_e(t.get('toolTimeMs'))} ms</td>"
            f"<td class=num>{_e(t.get('permissionWaitMs'))} ms</td>"
            f"<td>{_e(t.get('agentText'))}</td></tr>"
        )
    rows.append("</table>")
    return rows


def _tools(tools: list[dict[str, Any]]) -> list[str]:
    if not tools:
        return []
    out = ["<h2>Tool calls</h2>"]
    for t in tools:
        history = " → ".join(
            f"{_e(h.get('status'))} <span class=muted>@{_e(h.get('t_ms'))} ms</span>"
            for h in t.get("statusHistory") or []
        )
        kinds = ", ".join(_e(c.get("type")) for c in t.get("content") or [])
        out.append(
            f"<div class=card><b>{_e(t.get('title'))}</b> <code>{_e(t.get('toolCallId'))}"
            f"</code> <span class=muted>{_e(t.get('kind'))}</span><br>{history}"
            + (f"<br><span class=muted>content:</span> {kinds}" if kinds else "")
            + "".join(
                f"<br><span class=muted>location:</span> <code>{_e(loc.get('path'))}"
                f"{':' + _e(loc['line']) if loc.get('line') else ''}</code>"
                for loc in t.get("locations") or []
            )
            + "</div>"
        )
    return out


def _terminals(terminals: list[dict[str, Any]]) -> list[str]:
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
        screen = "\n".join(t.get("screen") or [])
        out.append(
            f"<div class=card><code>{_e(t.get('terminalId'))}</code> "
            f"<code>$ {_e(t.get('command'))}</code> <span class=muted>{_e(t.get('cwd'))} · "
            f"{ended} · tool calls {_e(', '.join(t.get('toolCallIds') or []))}</span>"
            f'<pre class="screen">{_e(screen)}</pre></div>'
        )
    return out


def _diffs(diffs: list[dict[str, Any]]) -> list[str]:
    if not diffs:
        return []
    out = ["<h2>File changes</h2>"]
    for d in diffs:
        head = (
            f"#{_e(d.get('seq'))} {_e(d.get('operation'))} <code>{_e(d.get('path'))}</code>"
            + (f" from <code>{_e(d['oldPath'])}</code>" if d.get("oldPath") else "")
            + f" <span class=muted>{_e(d.get('source'))}"
            + (f", tool call {_e(d['toolCallId'])}" if d.get("toolCallId") else "")
            + ("</span> <span class=odd>stale edit</span>" if d.get("stale") else "</span>")
        )
        body = f"<pre>{_patch(d['patch'])}</pre>" if d.get("patch") else ""
        out.append(f"<div class=card>{head}{body}</div>")
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


def _timeline(
    frames: list[StoredFrame], findings: dict[int, list[Finding]] | None = None
) -> list[str]:
    out = [
        f"<h2>Frames ({len(frames)})</h2><table><tr><th>t (ms)</th><th>#</th><th></th>"
        "<th>kind</th><th>method / update</th><th>id</th><th>summary and bytes</th>"
        "<th>latency</th></tr>"
    ]
    for f in frames:
        d = f.direction.value
        label = f.update_kind or f.method or ""
        odd = f" <span class=odd>{_e(','.join(f.anomalies))}</span>" if f.anomalies else ""
        latency = f"{f.latency_ns / 1e6:.2f} ms" if f.latency_ns is not None else ""
        out.append(
            f"<tr><td class=num>{f.frame.t_ns / 1e6:.3f}</td><td class=num>{f.seq}</td>"
            f'<td class="{d}">{_e(f.direction.arrow)}</td><td>{_e(f.kind)}</td>'
            f"<td>{_e(label)}</td><td><code>{_e(f.msg_id)}</code></td>"
            f"<td><details><summary>{_e(summary(f))}{odd}</summary>"
            f"<pre>{_e(_raw_text(f.raw))}</pre></details>"
            f"{_marks(findings.get(f.seq) if findings else None)}</td>"
            f"<td class=num>{latency}</td></tr>"
        )
    out.append("</table>")
    return out


def render_html(
    capture: dict[str, Any],
    frames: Iterable[StoredFrame],
    findings: Iterable[Finding] | None = None,
) -> str:
    """The whole page for one capture; ``findings`` (of ``acp-proxy check``) mark their
    frames and are counted in a section of their own."""
    stored = list(frames)
    found = list(findings or ())
    r = reconstruct(f.frame for f in stored)
    c = capture_row(capture)
    peers = f"{c['client'] or '?'} ⇄ {c['agent'] or '?'}"
    version = f"ACP v{c['protocol_version']}" if c["protocol_version"] is not None else ""
    duration = "running" if c["duration_s"] is None else f"{c['duration_s']} s"
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        f"<title>acp-proxy capture {c['id']}</title><style>{_CSS}</style></head><body>",
        f"<header><h1>Capture {c['id']} · {_e(c['transport'])} · {_e(c['agent_command'])}"
        f"</h1><p>{_e(peers)} {_e(version)}</p><p>started {_e(c['started_at'])} · "
        f"{_e(duration)} · {c['messages']} frames · {_e(c['status'])}"
        + (f" · label {_e(c['label'])}" if c.get("label") else "")
        + "</p></header><main>",
        *_turns(turns_json(r)),
        *_tools(tools_json(r)),
        *_terminals(terminals_json(r)),
        *_diffs(diffs_json(r)),
        *_conformance(found),
        *_timeline(stored, by_seq(found)),
        "</main></body></html>\n",
    ]
    return "\n".join(parts)

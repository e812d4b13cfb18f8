"""The frames table of the page, written as the frames are read.

What belongs here: one row per frame (its summary, its exact text up to :data:`RAW_SHOWN`
bytes, what ``check`` found in it), runs of message chunks collapsed into one row, and the
budget of frame text on one page.
"""

from __future__ import annotations

from typing import IO

from acp_proxy.check.core.findings import Finding
from acp_proxy.export.html.style import esc
from acp_proxy.store.reader import StoredFrame
from acp_proxy.text.summary import summary

RAW_SHOWN = 16 * 1024
_RAW_BUDGET = 32 * 1024 * 1024  # bytes of frame text on one page, all frames together
_RUN_KINDS = frozenset({"agent_message_chunk", "agent_thought_chunk", "user_message_chunk"})
_RUN_MIN = 3
_RUN_MAX = 2000


def _raw_text(raw: bytes, limit: int = RAW_SHOWN) -> str:
    shown = raw[:limit]
    text = shown.decode("utf-8", errors="backslashreplace")
    if len(raw) > limit:
        text += f"\n… {len(raw) - limit} more bytes (acp-proxy export has them all)"
    return text


def _marks(found: list[Finding] | None) -> str:
    if not found:
        return ""
    items = "".join(
        f"<br><code>{esc(f.severity)} {esc(f.rule)}</code> [{esc(f.side)}] {esc(f.message)}"
        for f in found
    )
    return f"<div class=odd>⚠ {len(found)} finding(s){items}</div>"


class Rows:
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
        odd = f" <span class=odd>{esc(','.join(f.anomalies))}</span>" if f.anomalies else ""
        latency = f"{f.latency_ns / 1e6:.2f} ms" if f.latency_ns is not None else ""
        bad = f.kind == "error" or bool(f.anomalies)
        if self.budget > 0:
            text = _raw_text(f.raw)
            self.budget -= len(text)
            body = f"<pre>{esc(text)}</pre>"
        else:
            body = "<p class=muted>bytes not shown on this page (acp-proxy show --json)</p>"
        return (
            f'<tr id="f{f.seq}"{" class=err" if bad else ""}>'
            f"<td class=num>{f.frame.t_ns / 1e6:.3f}</td><td class=num>{f.seq}</td>"
            f'<td class="{d}">{esc(f.direction.arrow)}</td><td>{esc(f.kind)}</td>'
            f"<td>{esc(label)}</td><td><code>{esc(f.msg_id)}</code></td>"
            f"<td><details><summary>{esc(summary(f))}{odd}</summary>{body}</details>"
            f"{_marks(self.marks.get(f.seq))}</td>"
            f"<td class=num>{latency}</td></tr>\n"
        )

    def add(self, f: StoredFrame) -> None:
        if f.update_kind in _RUN_KINDS and not f.anomalies:
            first = self.run[0] if self.run else None
            if first is None or (
                first.update_kind == f.update_kind
                and first.session_id == f.session_id
                and len(self.run) < _RUN_MAX
            ):
                self.run.append(f)
                return
        self.flush()
        if f.update_kind in _RUN_KINDS and not f.anomalies:
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
            f'<td class="{run[0].direction.value}">{esc(run[0].direction.arrow)}</td>'
            f"<td>{len(run)}×</td><td>{esc(run[0].update_kind)}</td><td></td>"
            f"<td><details><summary>{esc(said)}</summary><table>"
        )
        for f in run:
            self.out.write(self.row(f))
        self.out.write("</table></details></td><td></td></tr>\n")

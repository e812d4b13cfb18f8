"""The look of the page and the pieces of markup every part of it uses.

What belongs here: the stylesheet and the Content-Security-Policy that allows it (and
nothing else), escaping, spans with our classes, links to a frame's row, and patches
coloured line by line. Everything from the wire goes through :func:`esc`.
"""

from __future__ import annotations

import base64
import hashlib
import html
from typing import Any

CSS = """
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
.sb{font-weight:700} .si{font-style:italic} .su{text-decoration:underline} .sdim{opacity:.7}
.srev{filter:invert(1)} pre.stderr{background:#fffdf5}
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
ul.tree{list-style:none;margin:0;padding-left:0}
ul.tree ul.tree{padding-left:22px;border-left:2px solid #e3e6ea}
.badge{display:inline-block;padding:0 6px;border-radius:8px;border:1px solid #6b4fbb;color:#6b4fbb;
font-size:12px}
"""

_CSS_HASH = base64.b64encode(hashlib.sha256(CSS.encode()).digest()).decode()
CSP = f"default-src 'none'; style-src 'sha256-{_CSS_HASH}'; base-uri 'none'; form-action 'none'"


def esc(value: Any) -> str:
    """``value`` as text safe in an element or a quoted attribute (None: empty)."""
    return html.escape("" if value is None else str(value), quote=True)


def patch_html(text: str) -> str:
    """A unified diff, escaped, its added, removed and hunk lines in their colours."""
    out = []
    for line in text.splitlines():
        cls = ""
        if line.startswith("+") and not line.startswith("+++"):
            cls = "add"
        elif line.startswith("-") and not line.startswith("---"):
            cls = "del"
        elif line.startswith("@@"):
            cls = "hunk"
        out.append(f'<span class="{cls}">{esc(line)}</span>' if cls else esc(line))
    return "\n".join(out)


def span(cls: str | None, text: str) -> str:
    """``text`` escaped, in a span of the classes ``cls`` when there are any."""
    return f'<span class="{cls}">{esc(text)}</span>' if cls else esc(text)


def link(seq: Any, shown: range) -> str:
    """``#seq``, a link to the frame's row when the page shows it."""
    if not isinstance(seq, int):
        return esc(seq)
    return f'<a href="#f{seq}">#{seq}</a>' if seq in shown else f"#{seq}"

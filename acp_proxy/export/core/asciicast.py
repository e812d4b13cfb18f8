"""A terminal's output as an asciicast v2 recording (pure, no I/O).

What belongs here: turning a :class:`~acp_proxy.reconstruct.terminals.Terminal` timeline into
the text of an asciicast v2 file (a JSON header line, then ``[seconds, "o", text]`` events)
that ``asciinema play`` replays with the recorded timing. Times are seconds since the
terminal was first seen. A snapshot that extends what was shown is played as the new part;
any other snapshot clears the screen first (``ESC c``), as it replaces every byte
(docs/protocol.md §6.3). As on the ``screen`` view, a bare line feed is played as CR LF.
"""

from __future__ import annotations

import orjson

from acp_proxy.reconstruct.terminals import DEFAULT_COLS, DEFAULT_ROWS, Terminal

__all__ = ["asciicast"]

_RESET = "\x1bc"


def _crlf(text: str, after_cr: bool) -> str:
    out = []
    prev_cr = after_cr
    for ch in text:
        if ch == "\n" and not prev_cr:
            out.append("\r")
        out.append(ch)
        prev_cr = ch == "\r"
    return "".join(out)


def asciicast(t: Terminal) -> str:
    """The asciicast v2 text (header and events, newline-terminated lines)."""
    size = t.size or {}
    cols = size.get("cols") if isinstance(size.get("cols"), int) else DEFAULT_COLS
    rows = size.get("rows") if isinstance(size.get("rows"), int) else DEFAULT_ROWS
    header: dict[str, object] = {
        "version": 2,
        "width": cols,
        "height": rows,
        "env": {"TERM": "xterm-256color"},
    }
    title = " ".join(" ".join([t.command or "", *map(str, t.args)]).split())
    if title:
        header["title"] = title if len(title) <= 120 else title[:119] + "…"
    lines = [orjson.dumps(header)]
    shown = ""
    after_cr = False
    for e in t.events:
        if e.kind == "chunk":
            out = e.text
            shown += e.text
        elif e.kind in ("snapshot", "output"):
            if e.text.startswith(shown):
                out = e.text[len(shown) :]
            else:
                out = _RESET + e.text
                after_cr = False
            shown = e.text
        else:
            continue
        if not out:
            continue
        played = _crlf(out, after_cr)
        after_cr = played.endswith("\r")
        at = max(e.t_ns - t.first_t_ns, 0) / 1e9
        lines.append(orjson.dumps([round(at, 6), "o", played]))
    return "".join(line.decode() + "\n" for line in lines)

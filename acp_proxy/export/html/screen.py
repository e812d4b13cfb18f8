"""A terminal's screen in its colours, as HTML.

What belongs here: mapping the emulator's cell attributes (colour names or ``rrggbb``,
bold, italics, underscore, reverse) to the 16 colour classes of the stylesheet, and a
screen as spans of those classes. The peer's escape sequences never reach the page.
"""

from __future__ import annotations

from typing import Any

from acp_proxy.export.html.style import span
from acp_proxy.reconstruct.terminals import Attrs, render_cells

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


def screen_html(text: str, size: Any) -> str:
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
                out.append(span(current, "".join(run)))
                run = []
            current = cls
            run.append(c[0])
        if run:
            out.append(span(current, "".join(run)))
        lines.append("".join(out))
    return "\n".join(lines)

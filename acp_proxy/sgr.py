"""A peer's colours, drawn safely: SGR parsed into a whitelisted look, re-emitted by us (pure).

What belongs here: agents log to stderr with SGR colour (``\\x1b[31mERROR\\x1b[0m``). Printing
those bytes would let a peer write controls to the terminal; escaping them all (as
:func:`~acp_proxy.text.safe.visible` does) makes real logs unreadable. So the SGR sequences
alone — ``ESC [ params m``, params digits, ``;`` and ``:`` — are parsed into a :class:`Look`
of known attributes (foreground and background colour, bold, dim, italic, underline,
reverse); every other byte stays text, and every other control is still made visible. A look
is then drawn by us: as SGR parameters of our own making on a terminal that wants colour
(``Styled`` parts whose style is ``sgr:PARAMS``, :func:`parts`), as nothing on one that does
not (:func:`strip`), as CSS class names in HTML and the web inspector (:meth:`Look.classes`).
Colours beyond the 16 basic ones are kept on a terminal and mapped to the nearest basic one
for CSS (a fixed stylesheet, no inline style under the pages' CSP).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

__all__ = ["Look", "parse", "parts", "strip"]

_SGR = re.compile(r"\x1b\[([0-9;:]*)m")
_RGB = 1 << 24  # a colour >= this is 24-bit: _RGB + 0xrrggbb


@dataclass(frozen=True, slots=True)
class Look:
    """What SGR can say that we draw: colours 0-15 (basic), 16-255 (256-colour) or
    ``_RGB + 0xrrggbb``, and five attributes."""

    fg: int | None = None
    bg: int | None = None
    bold: bool = False
    dim: bool = False
    italic: bool = False
    underline: bool = False
    reverse: bool = False

    @property
    def plain(self) -> bool:
        return self == _PLAIN

    def sgr(self) -> str:
        """SGR parameters that draw this look (digits and ``;`` only)."""
        codes = [c for c in (_colour_code(self.fg, 30), _colour_code(self.bg, 40)) if c]
        for on, code in ((self.bold, "1"), (self.dim, "2"), (self.italic, "3"),
                         (self.underline, "4"), (self.reverse, "7")):  # fmt: skip
            if on:
                codes.append(code)
        return ";".join(codes)

    def classes(self) -> list[str]:
        """CSS class names for this look, the ones the pages' stylesheets define for terminal
        screens too: ``f0``–``f15`` and ``b0``–``b15`` (the nearest basic colour), ``sb``
        bold, ``si`` italic, ``su`` underline, ``sdim``, ``srev``."""
        out = []
        if self.fg is not None:
            out.append(f"f{_basic(self.fg)}")
        if self.bg is not None:
            out.append(f"b{_basic(self.bg)}")
        for on, name in ((self.bold, "sb"), (self.dim, "sdim"), (self.italic, "si"),
                         (self.underline, "su"), (self.reverse, "srev")):  # fmt: skip
            if on:
                out.append(name)
        return out


_PLAIN = Look()


def parse(text: str) -> list[tuple[str, Look]]:
    """``text`` cut at its SGR sequences: each piece of text with the look it is drawn in
    (empty pieces left out). Anything but SGR stays in the text."""
    out: list[tuple[str, Look]] = []
    look = _PLAIN
    at = 0
    for m in _SGR.finditer(text):
        if m.start() > at:
            out.append((text[at : m.start()], look))
        look = _apply(look, m.group(1))
        at = m.end()
    if at < len(text):
        out.append((text[at:], look))
    return out


def strip(text: str) -> str:
    """``text`` without its SGR sequences (other controls stay, to be made visible)."""
    return _SGR.sub("", text) if "\x1b[" in text else text


def parts(text: str, default: str | None) -> list[tuple[str, str | None]]:
    """``Styled`` parts for ``text``: a piece drawn in the peer's look has the style
    ``sgr:PARAMS``; a plain piece has ``default``."""
    if "\x1b[" not in text:
        return [(text, default)]
    return [(piece, default if look.plain else f"sgr:{look.sgr() or '0'}")
            for piece, look in parse(text)]  # fmt: skip


def _apply(look: Look, params: str) -> Look:
    """The look after one SGR sequence; unknown parameters are ignored."""
    codes = [_number(p) for p in re.split("[;:]", params)]
    i = 0
    while i < len(codes):
        c = codes[i]
        if c == 0:
            look = _PLAIN
        elif c in _ON:
            look = replace(look, **{_ON[c]: True})
        elif c in _OFF:
            look = replace(look, **dict.fromkeys(_OFF[c], False))
        elif 30 <= c <= 37 or 90 <= c <= 97:
            look = replace(look, fg=c - 30 if c < 90 else c - 82)
        elif 40 <= c <= 47 or 100 <= c <= 107:
            look = replace(look, bg=c - 40 if c < 100 else c - 92)
        elif c == 39:
            look = replace(look, fg=None)
        elif c == 49:
            look = replace(look, bg=None)
        elif c in (38, 48):
            colour, i = _extended(codes, i)
            look = replace(look, fg=colour) if c == 38 else replace(look, bg=colour)
            continue
        i += 1
    return look


def _number(p: str) -> int:
    """A parameter: empty is 0 (as terminals read it); one we cannot read is -1 (ignored)."""
    if not p:
        return 0
    return int(p) if p.isdigit() and len(p) < 10 else -1


_ON = {1: "bold", 2: "dim", 3: "italic", 4: "underline", 7: "reverse"}
_OFF = {22: ("bold", "dim"), 23: ("italic",), 24: ("underline",), 27: ("reverse",)}


def _extended(codes: list[int], i: int) -> tuple[int | None, int]:
    """``38;5;N`` or ``38;2;R;G;B`` at ``codes[i]``: the colour and where to go on."""
    kind = codes[i + 1] if i + 1 < len(codes) else None
    if kind == 5 and i + 2 < len(codes):
        n = codes[i + 2]
        return (n if 0 <= n <= 255 else None), i + 3
    if kind == 2 and i + 4 < len(codes):
        r, g, b = (min(max(v, 0), 255) for v in codes[i + 2 : i + 5])
        return _RGB + (r << 16 | g << 8 | b), i + 5
    return None, len(codes)  # malformed: the rest of the sequence means nothing


def _colour_code(c: int | None, base: int) -> str | None:
    if c is None:
        return None
    if c < 8:
        return str(base + c)
    if c < 16:
        return str(base + 60 + c - 8)
    if c < 256:
        return f"{base + 8};5;{c}"
    rgb = c - _RGB
    return f"{base + 8};2;{rgb >> 16 & 255};{rgb >> 8 & 255};{rgb & 255}"


# The 16 basic colours as a common terminal draws them, to map the others onto.
_BASIC_RGB = [
    (0, 0, 0), (205, 49, 49), (13, 188, 121), (229, 229, 16), (36, 114, 200),
    (188, 63, 188), (17, 168, 205), (229, 229, 229), (102, 102, 102), (241, 76, 76),
    (35, 209, 139), (245, 245, 67), (59, 142, 234), (214, 112, 214), (41, 184, 219),
    (255, 255, 255),
]  # fmt: skip


def _basic(c: int) -> int:
    """The nearest of the 16 basic colours."""
    if c < 16:
        return c
    if c < 256:
        rgb = _rgb_256(c)
    else:
        v = c - _RGB
        rgb = (v >> 16 & 255, v >> 8 & 255, v & 255)
    return min(
        range(16), key=lambda k: sum((a - b) ** 2 for a, b in zip(_BASIC_RGB[k], rgb, strict=True))
    )


def _rgb_256(c: int) -> tuple[int, int, int]:
    if c >= 232:
        v = 8 + (c - 232) * 10
        return v, v, v
    c -= 16
    steps = (0, 95, 135, 175, 215, 255)
    return steps[c // 36], steps[c // 6 % 6], steps[c % 6]

"""Colour for our own words, never for a peer's (pure).

What belongs here: :class:`Styled`, a line made of parts, each a piece of text and the name
of a style (or none); :func:`paint`, which makes every part safe with
:func:`~acp_proxy.text.safe.visible` *first* and only then wraps it in the escape sequence of
its style. The sequences come from the fixed table :data:`STYLES`, so whatever a recording
holds can only ever be shown, never written to the terminal as a control: a part whose text
came from a peer is coloured as a whole, by us.

A peer's own SGR colours (an agent's coloured stderr) are parts whose style is
``sgr:PARAMS``, parameters :mod:`acp_proxy.sgr` made from a parsed, whitelisted look.

Terminal screens keep their colours: :func:`screen_line` re-emits SGR from the attributes of
an emulated screen's cells (names and ``rrggbb`` values checked here), never the bytes the
peer sent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from acp_proxy.text.safe import visible

__all__ = ["STYLES", "Painted", "Styled", "paint", "plain", "screen_line", "sgr_of"]

# style name -> SGR parameters
STYLES: dict[str, str] = {
    "c2a": "34",  # blue: client → agent
    "a2c": "32",  # green: agent → client
    "error": "1;31",  # bold red: error responses, failed tool calls
    "anomaly": "1;33",  # bold yellow: anomalies
    "denied": "35",  # magenta: permission denials
    "stderr": "33",  # yellow: the agent's stderr
    "event": "36",  # cyan: lifecycle events
    "dim": "2",
    "bold": "1",
    "match": "7",  # reverse: a --grep match
}


@dataclass(frozen=True, slots=True)
class Styled:
    """A line of parts: ``(text, style name or None)``."""

    parts: tuple[tuple[str, str | None], ...]

    @staticmethod
    def of(*parts: tuple[str, str | None] | str) -> Styled:
        return Styled(tuple((p, None) if isinstance(p, str) else p for p in parts))

    def __add__(self, other: Styled | str) -> Styled:
        if isinstance(other, str):
            return Styled((*self.parts, (other, None)))
        return Styled(self.parts + other.parts)

    def __str__(self) -> str:
        return plain(self)


class Painted(str):
    """Text already made safe and coloured here (by :func:`screen_line`): printed as is."""

    __slots__ = ()


def plain(line: Styled | str) -> str:
    """The text of ``line`` without any colour (not yet made visible)."""
    if isinstance(line, str):
        return line
    return "".join(text for text, _ in line.parts)


def paint(line: Styled | str, colour: bool) -> str:
    """``line`` made safe to print; with ``colour``, each styled part wrapped in its SGR."""
    if isinstance(line, Painted):
        return str(line) if colour else _OURS.sub("", line)
    if isinstance(line, str):
        return visible(line)
    out = []
    for text, style in line.parts:
        shown = visible(text)
        code = _code(style) if (colour and style) else None
        out.append(f"\x1b[{code}m{shown}\x1b[0m" if code and shown else shown)
    return "".join(out)


_PARAMS = re.compile(r"[0-9;]{1,64}")


def _code(style: str) -> str | None:
    """The SGR parameters of a style: one of ours, or ``sgr:PARAMS`` — a peer's look as
    :mod:`acp_proxy.sgr` re-made it (digits and ``;`` only, checked again here)."""
    if style.startswith("sgr:"):
        params = style[4:]
        return params if _PARAMS.fullmatch(params) else None
    return STYLES.get(style)


# pyte's colour names (SGR 30-37 / 90-97), and 24-bit values it stores as rrggbb
_BASE = ["black", "red", "green", "brown", "blue", "magenta", "cyan", "white"]
_BRIGHT = {f"bright{n}": i for i, n in enumerate(_BASE)} | {"brightyellow": 3}
_HEX = re.compile(r"[0-9a-fA-F]{6}")


def _colour(value: str, base: int) -> str | None:
    """SGR parameters for one of pyte's colour values, ``base`` 30 (fg) or 40 (bg)."""
    if value in ("default", ""):
        return None
    if value in _BASE or value == "yellow":
        return str(base + (3 if value == "yellow" else _BASE.index(value)))
    if value in _BRIGHT:
        return str(base + 60 + _BRIGHT[value])
    if _HEX.fullmatch(value):
        r, g, b = (int(value[i : i + 2], 16) for i in (0, 2, 4))
        return f"{base + 8};2;{r};{g};{b}"
    return None  # anything else is not a colour we know: dropped


def sgr_of(fg: str, bg: str, bold: bool, italics: bool, underscore: bool, reverse: bool) -> str:
    """The SGR parameters of a cell's attributes ('' for the default look)."""
    codes = [c for c in (_colour(fg, 30), _colour(bg, 40)) if c]
    for on, code in ((bold, "1"), (italics, "3"), (underscore, "4"), (reverse, "7")):
        if on:
            codes.append(code)
    return ";".join(codes)


_OURS = re.compile(r"\x1b\[[0-9;]*m")  # only ours can be there: peer text went through visible()

Cell = tuple[str, str]  # (character, SGR parameters or '')


def screen_line(cells: Sequence[Cell] | Iterable[Cell], colour: bool) -> str:
    """One line of an emulated screen: the characters made visible, and with ``colour``
    the SGR of their attributes, re-emitted by us."""
    out = []
    current = ""
    for ch, sgr in cells:
        if colour and sgr != current:
            out.append("\x1b[0m" if not sgr else f"\x1b[0;{sgr}m")
            current = sgr
        out.append(visible(ch))
    if colour and current:
        out.append("\x1b[0m")
    return "".join(out)

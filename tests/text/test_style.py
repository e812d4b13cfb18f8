"""Colour never carries a peer's escapes: every part is made visible before our SGR wraps
it, and terminal screens are re-coloured from cell attributes, never from the bytes sent."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from acp_proxy.reconstruct.terminals import render_cells
from acp_proxy.text.style import STYLES, Styled, paint, screen_line, sgr_of

OURS = re.compile(r"\x1b\[[0-9;]*m")
CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
EVIL = "\x1b]52;c;cHduZWQ=\x07\x1b]0;pwned\x07\x1b[2J\x9b2J\x9d0;t\x9c\x85\r"


@given(st.lists(st.tuples(st.text(), st.sampled_from([None, *STYLES, "nonsense"]))))
def test_paint_colours_only_with_our_sequences(parts: list[tuple[str, str | None]]) -> None:
    line = Styled(tuple(parts))
    coloured = paint(line, True)
    assert CONTROLS.findall(OURS.sub("", coloured)) == []
    assert OURS.sub("", coloured) == paint(line, False)
    assert "\x1b" not in paint(line, False)


def test_paint_shows_hostile_text_and_colours_it() -> None:
    out = paint(Styled.of(("x" + EVIL, "error")), True)
    assert out.startswith("\x1b[1;31mx\\x1b]52;c;") and out.endswith("\x1b[0m")
    assert CONTROLS.findall(OURS.sub("", out)) == []


@given(
    st.lists(
        st.tuples(st.text(max_size=2), st.text(max_size=8), st.text(max_size=8), st.booleans())
    )
)
def test_screen_line_emits_only_sgr_from_known_attributes(
    cells: list[tuple[str, str, str, bool]],
) -> None:
    line = screen_line(
        ((ch, sgr_of(fg, bg, b, False, False, False)) for ch, fg, bg, b in cells), True
    )
    assert CONTROLS.findall(OURS.sub("", line)) == []
    for seq in OURS.findall(line):
        assert re.fullmatch(r"\x1b\[(0|0;[0-9;]+|[0-9;]+)m", seq)


def test_terminal_colours_survive_and_peer_escapes_do_not() -> None:
    # EVIL clears the screen (CSI 2J) and returns the carriage: what follows stays
    text = f"{EVIL}\n\x1b[31mred\x1b[0m plain \x1b[38;2;1;2;3mrgb\x1b[0m \x1b[1;44mX\x1b[0m\n"
    lines = [screen_line(((c[0], sgr_of(*c[1:])) for c in row), True) for row in render_cells(text)]
    shown = "\n".join(lines)
    assert "\x1b[0;31mred\x1b[0m" in shown
    assert "\x1b[0;38;2;1;2;3mrgb" in shown
    assert "\x1b[0;44;1mX" in shown
    assert "]52;" not in shown and "pwned" not in shown  # the emulator consumed them
    assert CONTROLS.findall(OURS.sub("", shown)) == []

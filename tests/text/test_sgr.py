"""A peer's SGR colours: parsed into a whitelisted look and drawn by us, never passed on."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from acp_proxy import sgr
from acp_proxy.text.style import Styled, paint, plain

ESC = "\x1b"


def test_a_coloured_log_line_is_cut_into_looks() -> None:
    line = f"{ESC}[2m2026-12-03T10:00:00Z{ESC}[0m {ESC}[1;31mERROR{ESC}[0m boom"
    pieces = sgr.parse(line)
    assert [t for t, _ in pieces] == ["2026-12-03T10:00:00Z", " ", "ERROR", " boom"]
    assert pieces[0][1] == sgr.Look(dim=True)
    assert pieces[2][1] == sgr.Look(fg=1, bold=True)
    assert pieces[1][1].plain and pieces[3][1].plain
    assert sgr.strip(line) == "2026-12-03T10:00:00Z ERROR boom"


def test_extended_colours_and_attributes_off() -> None:
    (_, a), (_, b), (_, c) = sgr.parse(f"{ESC}[38;5;208;48;2;0;0;255mx{ESC}[22;39my{ESC}[1;4;7mz")
    assert a.fg == 208 and a.bg is not None and a.sgr() == "38;5;208;48;2;0;0;255"
    assert b.fg is None and b.bg == a.bg
    assert c.bold and c.underline and c.reverse
    assert a.classes() == ["f9", "b4"]  # nearest basic colours, for CSS


def test_other_controls_stay_escaped_inside_colour() -> None:
    hostile = f"{ESC}[31m{ESC}]52;c;ZXZpbA=={ESC}\\\x07{ESC}[2J red{ESC}[0m"
    drawn = paint(Styled(tuple(sgr.parts(hostile, "stderr"))), True)
    assert "\\x1b]52" in drawn and "\\x07" in drawn and "\\x1b[2J" in drawn
    assert drawn.count(ESC) == 2  # our own SGR around the red piece, nothing else


def test_without_colour_the_look_is_dropped() -> None:
    line = f"{ESC}[31mERROR{ESC}[0m boom"
    assert paint(Styled(tuple(sgr.parts(line, "stderr"))), False) == "ERROR boom"
    assert plain(Styled(tuple(sgr.parts(line, "stderr")))) == "ERROR boom"


_OURS = re.compile(r"\x1b\[[0-9;]*m")


@given(
    st.text(
        alphabet=st.sampled_from(list("\x1b[];:m0123456789a\x07\x9b\n\r38;5;2")) | st.characters()
    )
)
def test_whatever_a_peer_writes_only_our_sgr_reaches_the_terminal(text: str) -> None:
    drawn = paint(Styled(tuple(sgr.parts(text, "stderr"))), True)
    rest = _OURS.sub("", drawn)
    assert not any(ord(ch) < 0x20 and ch not in "\n\t" for ch in rest)
    assert not any(0x7F <= ord(ch) < 0xA0 for ch in rest)
    assert paint(Styled(tuple(sgr.parts(text, "stderr"))), False).count(ESC) == 0


def test_huge_parameters_are_not_a_crash() -> None:
    assert sgr.parse(f"{ESC}[{'9' * 5000};38;5;{'1' * 99}mx") == [("x", sgr.Look())]

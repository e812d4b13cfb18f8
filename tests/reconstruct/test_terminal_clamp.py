"""A recorded terminal size too big to emulate is clamped, and the views say so."""

from __future__ import annotations

from acp_proxy.reconstruct.terminals import MAX_COLS, MAX_SCREEN_ROWS, Terminal
from acp_proxy.reconstruct.views import terminal_json


def _terminal(cols: int, rows: int) -> Terminal:
    t = Terminal("s", "term_1", "agent", 0, 0)
    t.size = {"cols": cols, "rows": rows}
    t.append(b"\x1b[2J\x1b[H" + b"x" * 2000 + b"\r\nend\x1b[5;3H*\n", 1, 1)  # emulated
    return t


def test_a_huge_recorded_size_is_clamped_and_said() -> None:
    t = _terminal(100_000, 10_000)
    assert t.screen_note == (
        f"recorded size 100000x10000; shown at most {MAX_COLS} columns x {MAX_SCREEN_ROWS} rows"
    )
    screen = t.screen()
    assert screen[0] == "x" * MAX_COLS and max(len(line) for line in screen) <= MAX_COLS
    data = terminal_json(t)
    assert data["screenNote"] == t.screen_note and data["size"] == t.size


def test_an_ordinary_size_is_not_clamped() -> None:
    t = _terminal(120, 40)
    assert t.screen_note is None
    assert t.screen()[0] == "x" * 120
    assert terminal_json(t)["screenNote"] is None

"""Where two sequences differ, bounded (acp_proxy/replay/core/sequences.py): the opcodes
always turn one into the other, in order and without gaps, and a long
session compared with itself or a near copy costs a pass, not the product of the lengths."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st

from acp_proxy.replay.core import sequences
from acp_proxy.replay.core.sequences import opcodes


def _apply(a: Sequence[object], b: Sequence[object]) -> list[object]:
    out: list[object] = []
    for op, i1, i2, j1, j2 in opcodes(a, b):
        assert (op == "equal") == (list(a[i1:i2]) == list(b[j1:j2]) and i2 > i1)
        out += a[i1:i2] if op == "equal" else b[j1:j2]
    return out


@given(st.lists(st.integers(0, 3)), st.lists(st.integers(0, 3)))
def test_the_opcodes_turn_a_into_b(a: list[int], b: list[int]) -> None:
    assert _apply(a, b) == b
    ops = opcodes(a, b)
    assert [o[1] for o in ops[1:]] == [o[2] for o in ops[:-1]]  # contiguous, in order
    assert [o[3] for o in ops[1:]] == [o[4] for o in ops[:-1]]


def test_a_long_repetitive_session_against_a_near_copy_is_one_pass() -> None:
    a = ["chunk"] * 300_000 + ["end"]
    b = ["chunk"] * 150_000 + ["other"] + ["chunk"] * 150_000 + ["end"]
    assert opcodes(a, a) == [("equal", 0, len(a), 0, len(a))]
    assert opcodes(a, b) == [
        ("equal", 0, 150_000, 0, 150_000),
        ("insert", 150_000, 150_000, 150_000, 150_001),
        ("equal", 150_000, len(a), 150_001, len(b)),
    ]


def test_a_middle_too_large_to_match_is_one_replaced_stretch() -> None:
    a, b = list(range(2000)), list(range(1, 2001))[::-1]
    assert len(a) * len(b) <= sequences.MATCHED_AT_MOST  # matched item by item
    assert _apply(a, b) == b
    big_a, big_b = list(range(3000)), list(range(3000, 6000))
    assert len(big_a) * len(big_b) > sequences.MATCHED_AT_MOST
    assert opcodes(big_a, big_b) == [("replace", 0, 3000, 0, 3000)]

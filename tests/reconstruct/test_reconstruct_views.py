"""The JSON views' own rules (acp_proxy/reconstruct/views.py): times in milliseconds."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from acp_proxy.reconstruct.views import _ms


@given(st.integers(-(2**60), 2**60) | st.integers(0, 10**9).map(lambda n: n * 1000 + 500))
@example(0)
@example(499)
@example(500)
@example(501)
@example(1_000_499)
@example(2**50 - 1)
@example(2**50)
@example(-500)
def test_milliseconds_are_round_to_the_microsecond(t_ns: int) -> None:
    assert _ms(t_ns) == round(t_ns / 1e6, 3)
    assert repr(_ms(t_ns)) == repr(round(t_ns / 1e6, 3))
    assert _ms(None) is None

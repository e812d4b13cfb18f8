"""The rule for a listener's refusal lines (acp_proxy/relay/core/throttle.py), on a given
clock: the first of each status per interval, the rest counted and told once."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from acp_proxy.relay.core.throttle import Refusals


def test_a_line_per_status_per_interval_and_the_count_before_the_next() -> None:
    r = Refusals(interval_s=10)
    assert r.say(421, "a", 0.0) == ["a"]
    assert r.say(421, "b", 1.0) == []
    assert r.say(503, "full", 2.0) == ["full"]  # another status has a line of its own
    assert r.say(421, "c", 9.5) == []
    assert r.say(421, "d", 10.0) == [
        "2 more answered HTTP 421 in 9.5 s (a line per status per 10 s)",
        "d",
    ]
    assert r.say(421, "e", 25.0) == ["e"]  # nothing was left out in between: no count
    assert r.rest(30.0) == []


def test_the_counts_left_are_told_at_the_end_once() -> None:
    r = Refusals(interval_s=10)
    r.say(408, "slow", 0.0)
    r.say(408, "slow", 0.5)
    assert r.rest(3.0) == ["1 more answered HTTP 408 in 0.5 s (a line per status per 10 s)"]
    assert r.rest(4.0) == []


@given(st.lists(st.tuples(st.sampled_from([401, 408, 421, 503]), st.floats(0, 5)), max_size=60))
def test_every_refusal_is_written_or_counted(steps: list[tuple[int, float]]) -> None:
    r, now, written, counted = Refusals(interval_s=10), 0.0, 0, 0
    for status, dt in steps:
        now += dt
        for line in r.say(status, "x", now):
            if line == "x":
                written += 1
            else:
                counted += int(line.split()[0])
    counted += sum(int(line.split()[0]) for line in r.rest(now))
    assert written + counted == len(steps)
    assert written <= len({s for s, _ in steps}) * (1 + int(now // 10) + 1)

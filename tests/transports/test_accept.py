"""How a listener backs off when ``accept`` fails for want of descriptors: the rule alone
(:class:`acp_proxy.transports.accept.Backoff`), times in, decisions out. The listeners
running out of descriptors for real: ``tests/relay/test_listener_faults.py``."""

from __future__ import annotations

import errno
import itertools
import socket

from acp_proxy.transports.accept import Backoff, listening_sockets

EMFILE = OSError(errno.EMFILE, "Too many open files")


def test_the_wait_doubles_up_to_a_second_and_is_said_once_per_interval() -> None:
    b = Backoff()
    delays, lines = [], []
    now = 100.0
    for _ in range(40):  # 40 failures in a row, each after the last wait
        delay, line = b.failed(now, EMFILE)
        delays.append(delay)
        lines.append((now, line))
        now += delay
    assert delays[:6] == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0] and set(delays[5:]) == {1.0}
    said = [(t, line) for t, line in lines if line is not None]
    assert said[0][0] == 100.0 and "EMFILE" in said[0][1] and "\n" not in said[0][1]
    assert all(b - a >= 10.0 for (a, _), (b, _) in itertools.pairwise(said))
    assert len(said) == 4  # 100, 110.x, 120.x, 130.x over some 35 s


def test_accepting_again_is_said_once_and_starts_over() -> None:
    b = Backoff()
    assert b.accepted(1.0) is None  # nothing to say when nothing was wrong
    b.failed(10.0, EMFILE)
    b.failed(10.05, EMFILE)
    line = b.accepted(12.5)
    assert line is not None and "2.5 s" in line and "2 failed" in line
    assert b.accepted(13.0) is None
    delay, again = b.failed(20.0, EMFILE)  # a new shortage: from the first wait, said at once
    assert delay == 0.05 and again is not None


def test_listening_sockets_bind_every_address_of_a_name() -> None:
    socks = listening_sockets("localhost", 0)
    try:
        families = {s.family for s in socks}
        assert socket.AF_INET in families
        assert all(not s.getblocking() for s in socks)
    finally:
        for s in socks:
            s.close()

"""Relays: pump two endpoints, handing a copy of everything to the recorder first."""

from __future__ import annotations

import sys
import time

from acp_proxy import collector
from acp_proxy.record.link import stderr_warn
from acp_proxy.relay.core.throttle import Refusals
from acp_proxy.text.safe import visible

__all__ = ["RefusalLog", "tune_relay_process", "warn"]


def tune_relay_process() -> None:
    """Process-wide settings for a process that relays (the CLI's relaying commands).

    A short GIL switch interval lets the thread or event loop with bytes to forward take
    the GIL within half a millisecond instead of five; the garbage collector is set for
    relaying (:func:`acp_proxy.collector.for_relaying`).
    """
    sys.setswitchinterval(0.0005)
    collector.for_relaying()


def warn(message: str) -> None:
    """A warning on stderr; what peers sent in it (paths, close reasons) is shown escaped."""
    stderr_warn(visible(message))


class RefusalLog:
    """A listener's lines for the clients it answers itself, at most one per status per
    interval (:class:`acp_proxy.relay.core.throttle.Refusals`)."""

    def __init__(self) -> None:
        self._rule = Refusals()

    def refused(self, status: int, message: str) -> None:
        for line in self._rule.say(status, message, time.monotonic()):
            warn(line)

    def close(self) -> None:
        """The listener stops: the counts not told yet."""
        for line in self._rule.rest(time.monotonic()):
            warn(line)

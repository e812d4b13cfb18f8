"""Relays: pump two endpoints, handing a copy of everything to the recorder first."""

from __future__ import annotations

import sys

from acp_proxy import collector
from acp_proxy.record.link import stderr_warn
from acp_proxy.text.safe import visible

__all__ = ["tune_relay_process", "warn"]


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

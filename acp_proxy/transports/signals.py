"""The signals that ask a program of ours to stop, and listening for them on an event loop.

What belongs here: :data:`STOP_SIGNALS` — what a terminal's Ctrl-C, a ``kill`` and a
closed terminal or editor send (SIGINT, SIGTERM, SIGHUP) — named once for every process
that handles them: a relay passes them on to its agent (with more: ``relay/stdio.py``), a
listener or a bridge stops on them (:func:`on_stop_signals`), the recorder process ignores
them so it is never cut short (``record/child.py``).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator

__all__ = ["STOP_SIGNALS", "on_stop_signals"]

STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def on_stop_signals(callback: Callable[[int], None]) -> Iterator[None]:
    """While inside, each of :data:`STOP_SIGNALS` calls ``callback`` with its number on the
    running event loop (in the main thread only: a loop can install handlers nowhere
    else)."""
    import asyncio  # here: the recorder process, which only names the signals, runs no loop

    loop = asyncio.get_running_loop()
    installed = []
    if threading.current_thread() is threading.main_thread():
        for s in STOP_SIGNALS:
            loop.add_signal_handler(s, callback, int(s))
            installed.append(s)
    try:
        yield
    finally:
        for s in installed:
            loop.remove_signal_handler(s)

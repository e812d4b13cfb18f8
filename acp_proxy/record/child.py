"""``python -m acp_proxy.record.child DB JOURNAL``: the recorder process.

What belongs here: the process a relay starts to record its journal ``JOURNAL``
(:mod:`acp_proxy.record.journal`) into ``DB``. Its stdin is the journal's doorbell: a
byte on it means "more was written", its end means the relay is gone — exited or killed:
what the relay had journaled is still recorded, and the captures it did not close are
marked as ended with it. It is in its own session and ignores the
signals a terminal or an editor sends the relay's process group, so it is never cut short;
it ignores ``SIGXFSZ`` too, so a file size limit is an error it handles, not its death.
Warnings go to stderr, which is a pipe the relay reads and passes on to its own
(:mod:`acp_proxy.record.voice`), never the editor's stderr itself: once the relay is gone
nothing reads it, and what the recorder still has to say goes to ``DB.log`` (mode 0600) and
into the capture's events (``recorder_note``), so the editor waiting for the relay's stderr to
close is never held up by a recorder still catching up.

Recording knows nothing of who else wants its rows. A relay that wants them seen as they
are committed (live spans: :mod:`acp_proxy.otel.live`) names an :class:`Observer` in the
recorder's environment (:data:`OBSERVER_ENV`, ``module:function``); the function is given
the environment and the warning channel and returns the observer, or None.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Protocol

from acp_proxy import collector
from acp_proxy.record.core.rows import Row
from acp_proxy.record.recorder import Recorder
from acp_proxy.store.db import now_iso
from acp_proxy.transports.signals import STOP_SIGNALS

__all__ = ["OBSERVER_ENV", "Observer", "main"]

OBSERVER_ENV = "ACP_PROXY_OBSERVER"
"""``module:function`` (a module of this package) that makes the recorder's :class:`Observer`."""


class Observer(Protocol):
    """Sees each batch of rows once it is committed, and the end of the recording."""

    def rows(self, rows: list[Row]) -> None: ...
    def close(self, db: Path) -> object: ...


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m acp_proxy.record.child DB JOURNAL", file=sys.stderr)
        return 2
    for s in (*STOP_SIGNALS, signal.SIGXFSZ):
        signal.signal(s, signal.SIG_IGN)
    collector.for_recording()  # the recorder collects by itself when idle
    # Forward first, record second, in CPU time too: when the machine is busy (a flood),
    # the relay and its peers run first; the journal holds what the recorder has not read.
    with contextlib.suppress(OSError):
        os.nice(10)
    db = Path(args[0])
    with contextlib.suppress(OSError):
        os.set_blocking(2, False)  # a relay that does not read us never blocks us
    out = _Warnings(db)
    observer = _observer(os.environ, out.warn)
    recorder = Recorder(
        db, args[1], 0, warn=out.warn, observer=observer.rows if observer is not None else None
    )
    out.notes = recorder.note
    code = recorder.run()
    if observer is not None:
        observer.close(db)
    return code


def _observer(environ: Mapping[str, str], warn: Callable[[str], None]) -> Observer | None:
    """The observer the relay named in :data:`OBSERVER_ENV`, if any (one outside this
    package is not imported: the variable says which of ours, nothing more)."""
    target = environ.get(OBSERVER_ENV)
    if not target:
        return None
    module, _, attr = target.partition(":")
    if not module.startswith("acp_proxy."):
        warn(f"warning: {OBSERVER_ENV}={target!r} is not one of acp-proxy's; ignored")
        return None
    make: Callable[[Mapping[str, str], Callable[[str], None]], Observer | None]
    make = getattr(importlib.import_module(module), attr)
    return make(environ, warn)


class _Warnings:
    """stderr while the relay reads it; ``DB.log`` and the capture's events once it does
    not (it is gone)."""

    def __init__(self, db: Path) -> None:
        self._log = Path(f"{db}.log")
        self._detached = False
        self._lock = threading.Lock()
        self.notes: Callable[[str], None] | None = None

    def warn(self, message: str) -> None:
        line = f"acp-proxy: {message}\n".encode("utf-8", "backslashreplace")
        with self._lock:
            if not self._detached:
                try:
                    if os.write(2, line) == len(line):
                        return
                except BlockingIOError:
                    pass  # the relay is slow to read: this one goes to the log
                except OSError:  # nobody reads our stderr any more: the relay is gone
                    self._detached = True
            with contextlib.suppress(OSError):
                fd = os.open(self._log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                with os.fdopen(fd, "a", encoding="utf-8", errors="backslashreplace") as f:
                    f.write(f"{now_iso()} acp-proxy: {message}\n")
        if self._detached and self.notes is not None:
            self.notes(message)


if __name__ == "__main__":
    raise SystemExit(main())

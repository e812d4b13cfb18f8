"""``python -m acp_proxy.record.child DB JOURNAL``: the recorder process.

What belongs here: the process a relay starts to record its journal ``JOURNAL``
(:mod:`acp_proxy.record.journal`) into ``DB``. Its stdin is the journal's doorbell: a
byte on it means "more was written", its end means the relay is gone — exited or killed:
what the relay had journaled is still recorded, and the captures it did not close are
marked as ended with it. It is in its own session and ignores the
signals a terminal or an editor sends the relay's process group, so it is never cut short;
it ignores ``SIGXFSZ`` too, so a file size limit is an error it handles, not its death.
Warnings go to stderr, which it shares with the relay — until the relay has been gone for a
moment: a recorder still finishing then lets go of that stderr (whoever reads the relay's
stderr, an editor, is not held up) and writes what it still has to say to ``DB.log``.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
import threading
from pathlib import Path

from acp_proxy.record.link import stderr_warn
from acp_proxy.record.recorder import Recorder
from acp_proxy.store.db import now_iso

__all__ = ["main"]

# The relay waits this long less than its own wait for us (link.close), so its stderr ends
# with it whenever we take longer.
_DETACH_AFTER_S = 0.4


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m acp_proxy.record.child DB JOURNAL", file=sys.stderr)
        return 2
    for s in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGXFSZ):
        signal.signal(s, signal.SIG_IGN)
    # Batches are many short-lived objects and no cycles: the cyclic collector only
    # costs here (a third of the time at 200 B frames). The recorder runs it itself when
    # idle, for the rare cycle (an exception's traceback, say).
    gc.freeze()
    gc.disable()
    # Forward first, record second, in CPU time too: when the machine is busy (a flood),
    # the relay and its peers run first; the journal holds what the recorder has not read.
    with contextlib.suppress(OSError):
        os.nice(10)
    db = Path(args[0])
    out = _Warnings(db)
    telemetry = None
    if os.environ.get("ACP_PROXY_OTEL"):  # live spans (acp_proxy.otel.live), off the relay
        from acp_proxy.otel.live import from_env

        telemetry = from_env(os.environ, out.warn)
    observer = telemetry.rows if telemetry is not None else None
    recorder = Recorder(db, args[1], 0, warn=out.warn, on_input_end=out.detach_later,
                        observer=observer)  # fmt: skip
    code = recorder.run()
    if telemetry is not None:
        telemetry.close(db)
    return code


class _Warnings:
    """stderr while the relay is there; ``DB.log`` once this process outlives it."""

    def __init__(self, db: Path) -> None:
        self._log = Path(f"{db}.log")
        self._detached = False
        self._lock = threading.Lock()

    def warn(self, message: str) -> None:
        with self._lock:
            if not self._detached:
                stderr_warn(message)
                return
            with contextlib.suppress(OSError):
                fd = os.open(self._log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                with os.fdopen(fd, "a", encoding="utf-8", errors="backslashreplace") as f:
                    f.write(f"{now_iso()} acp-proxy: {message}\n")

    def detach_later(self) -> None:
        timer = threading.Timer(_DETACH_AFTER_S, self._detach)
        timer.daemon = True
        timer.start()

    def _detach(self) -> None:
        with self._lock:
            with contextlib.suppress(OSError):
                sys.stderr.flush()
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 2)
                os.close(devnull)
            self._detached = True


if __name__ == "__main__":
    raise SystemExit(main())

"""What a helper process of ours says on stderr, relayed through us and never past our end.

What belongs here: :class:`RelayedStderr`. The processes a relay starts beside the agent
(the recorder, the live checker) outlive it by design, and the editor waits for the relay's
stderr to close before it calls the agent gone (Node's ``close`` event, Python's
``subprocess.run``). So a helper is never given the editor's stderr: it writes to a pipe
whose only reader is a thread of ours that copies what arrives to our stderr. Once we have
exited — or been killed — nothing reads that pipe and the helper's next write fails
(``EPIPE``): it then says what it has to say elsewhere (a log beside the database, the
capture's events), holding nothing of the editor's.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading

__all__ = ["RelayedStderr"]

_POLL_MS = 100


class RelayedStderr:
    """A pipe for helpers' stderr (:attr:`fd`, passed as a child's ``stderr``), copied to
    ``target`` by a thread until :meth:`close`."""

    def __init__(self, target: int = 2) -> None:
        self._read, self.fd = os.pipe()
        self._target = target
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._copy, name="acp-proxy-helper-stderr",
                                        daemon=True)  # fmt: skip
        self._thread.start()

    def _copy(self) -> None:
        poller = select.poll()
        poller.register(self._read, select.POLLIN)
        while not self._stop.is_set():
            if poller.poll(_POLL_MS) and not self._pass_on():
                return

    def _pass_on(self) -> bool:
        try:
            data = os.read(self._read, 1 << 16)
        except OSError:
            return False
        view = memoryview(data)
        with contextlib.suppress(OSError):
            while view:
                view = view[os.write(self._target, view) :]
        return bool(data)

    def close(self) -> None:
        """Pass on what is waiting, then stop reading: from now on a helper's write fails."""
        self._stop.set()
        self._thread.join(timeout=1.0)
        os.set_blocking(self._read, False)
        with contextlib.suppress(BlockingIOError):
            while self._pass_on():
                pass
        for fd in (self._read, self.fd):
            with contextlib.suppress(OSError):
                os.close(fd)

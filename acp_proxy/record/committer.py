"""Writing one batch to the database while the next is being made.

What belongs here: :class:`Committer`, a thread that owns the recorder's database connection
for the time one batch takes to write. SQLite releases the interpreter lock while it inserts
and commits, so on a machine with two cores the recorder reads and classifies batch N + 1
while batch N is written: the two halves of its work overlap instead of taking turns.

One batch at most is in flight. The recorder waits for it (:meth:`Committer.wait`) before it
hands over the next one or touches the connection itself, so the connection is never used by
two threads at once, and every failure comes back to the recorder, which keeps the batch's
rows and handles the failure as if it had written them itself (docs/recording.md).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

__all__ = ["Committer"]


class Committer:
    """Runs ``write()`` calls one at a time on a thread of its own."""

    def __init__(self, name: str = "acp-proxy-commit") -> None:
        self._cond = threading.Condition()
        self._job: Callable[[], None] | None = None
        self._busy = False
        self._error: BaseException | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    @property
    def busy(self) -> bool:
        with self._cond:
            return self._busy

    def submit(self, job: Callable[[], None]) -> None:
        """Start ``job`` on the thread; the previous one must have been waited for."""
        with self._cond:
            if self._busy or self._closed:
                raise RuntimeError("a batch is still in flight, or the committer is closed")
            self._job = job
            self._busy = True
            self._error = None
            self._cond.notify_all()

    def wait(self) -> BaseException | None:
        """Wait for the job in flight; what it raised, or None when it succeeded (or when
        nothing was in flight)."""
        with self._cond:
            while self._busy:
                self._cond.wait()
            error, self._error = self._error, None
            return error

    def close(self) -> None:
        """Wait for the job in flight, then end the thread."""
        self.wait()
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join()

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._job is None and not self._closed:
                    self._cond.wait()
                job, self._job = self._job, None
            if job is None:
                return
            error: BaseException | None = None
            try:
                job()
            except BaseException as e:  # handed to the recorder, which decides
                error = e
            with self._cond:
                self._error = error
                self._busy = False
                self._cond.notify_all()

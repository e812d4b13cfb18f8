"""The relay's side of recording: every byte is journaled before it is forwarded.

What belongs here: :class:`RecorderLink`, a relaying process's recording — its journal
(:mod:`acp_proxy.record.journal`) and the recorder process that follows it
(:mod:`acp_proxy.record.child`). The relay's handle on one capture, :class:`Tap`, is in
:mod:`acp_proxy.record.tap` (and named here too, where relays import it from).
``Tap.chunk`` appends the chunk to the journal, and only then does the relay forward it:
the bytes are in the page cache, so they are recorded even if this process is killed the
next moment (docs/recording.md). That append, and a one-byte ring of the recorder's
doorbell, are the relay's only recording work per chunk; neither ever waits for the
recorder. If the recorder dies, a new one carries on from where the database says the
journal was read to: nothing is lost.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import orjson

from acp_proxy import settings
from acp_proxy.record.core.wire import HEADER, Type
from acp_proxy.record.journal import JournalWriter
from acp_proxy.record.tap import CaptureMeta, Tap
from acp_proxy.record.voice import RelayedStderr
from acp_proxy.store import liveness, private

__all__ = ["CaptureMeta", "RecorderLink", "Tap", "stderr_warn"]

_MAX_RESTARTS = 5

Warn = Callable[[str], None]


def stderr_warn(message: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"acp-proxy: {message}\n")
        sys.stderr.flush()


class RecorderLink:
    """A relaying process's recording: its journal, and the recorder that follows it."""

    def __init__(
        self,
        db_path: Path,
        *,
        warn: Warn = stderr_warn,
        in_process: bool = False,
        recorder_env: dict[str, str] | None = None,
    ) -> None:
        self.db_path = Path(db_path)
        self._recorder_env = recorder_env  # added to the recorder process's environment
        self.lock = threading.Lock()
        self.identity = liveness.identity()
        self.journal_id = uuid.uuid4().hex[:16]
        self._warn = warn
        self._bell = -1
        self._proc: subprocess.Popen[bytes] | None = None
        self._voice: RelayedStderr | None = None  # the recorder's stderr, through us
        self._thread: threading.Thread | None = None
        self._next = 1
        self._restarts = 0
        self._closed = False
        self._late = 0
        if os.environ.get("ACP_PROXY_RECORDER") == "thread":
            in_process = True
        self._in_process = in_process
        problem = private.refusal(self.db_path)
        self.refused = problem is not None
        self.journal: JournalWriter | None = None
        if problem is not None:
            # forwarding goes on (an editor's session must not fail for it), nothing is
            # recorded: the database is not ours alone (acp_proxy.store.private)
            self._warn(f"warning: not recording: {problem}; traffic is still forwarded")
            return
        self.journal = JournalWriter(self.db_path, self.journal_id, warn=warn)
        self._waiting = self.journal.broken  # for a journal: a recorder once there is one
        if self.journal.broken:  # nothing to follow yet: losses are counted meanwhile
            self._bell = os.open(os.devnull, os.O_WRONLY)
        else:
            self._start()

    # -- captures ------------------------------------------------------------------------

    def open_capture(self, meta: CaptureMeta) -> Tap:
        with self.lock:
            tap = Tap(self, meta, self._next)
            self._next += 1
            payload = tap.open_payload()
            if self.journal is not None:
                self.journal.declare(tap.number, orjson.loads(payload))
            head = HEADER.pack(len(payload), Type.OPEN, 0, 0, tap.number, 0, 0,
                               time.monotonic_ns())  # fmt: skip
            self.send_locked(head, payload)
            return tap

    def closed(self, tap: Tap) -> None:
        """``tap``'s capture is closed (records may still follow: bytes read late)."""

    # -- the recorder --------------------------------------------------------------------

    @property
    def recorder_pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def _start(self) -> None:
        r, w = os.pipe()
        proc = None
        if not self._in_process:
            if self._voice is None:
                self._voice = RelayedStderr()
            try:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "acp_proxy.record.child", str(self.db_path),
                     self.journal_id],
                    stdin=r,
                    stdout=subprocess.DEVNULL,
                    stderr=self._voice.fd,  # never the editor's: it may outlive us
                    close_fds=True,
                    start_new_session=True,  # a Ctrl-C or a kill of our group spares it
                    env={**os.environ, **(self._recorder_env or {}), **settings.said_env()},
                )  # fmt: skip
            except OSError as e:
                self._warn(f"warning: cannot start the recorder process ({e}); recording here")
        if proc is not None:
            os.close(r)
            self._proc = proc
        else:
            from acp_proxy.record.recorder import Recorder

            recorder = Recorder(self.db_path, self.journal_id, r, warn=self._warn)

            def run() -> None:
                try:
                    recorder.run()
                finally:
                    os.close(r)

            self._thread = threading.Thread(target=run, name="acp-proxy-recorder")
            self._thread.start()
            self._in_process = True
        os.set_blocking(w, False)
        self._bell = w

    def send_locked(self, head: bytes, payload: bytes) -> None:
        """Journal one record, then ring the recorder (the caller holds :attr:`lock`).

        The journal never waits for the recorder; a failed write is kept as a loss by the
        journal itself (a full disk)."""
        if self.journal is None:
            return  # recording refused at start, and said so
        if self._closed:
            self._late += len(payload)
            return
        self.journal.write(head, payload)
        if self._waiting and not self.journal.broken:  # space again: follow it from now
            self._waiting = False
            os.close(self._bell)
            self._start()
        try:
            os.write(self._bell, b"\0")
        except BlockingIOError:
            pass  # it has many rings pending already
        except OSError:  # the recorder is gone: a new one carries on from the journal
            self._replace()

    def send_many_locked(self, records: list[tuple[bytes, bytes]]) -> None:
        """:meth:`send_locked` for several records: one journal write, one ring."""
        if self.journal is None or not records:
            return
        if self._closed:
            self._late += sum(len(payload) for _, payload in records)
            return
        self.journal.write_many(records)
        try:
            os.write(self._bell, b"\0")
        except BlockingIOError:
            pass
        except OSError:
            self._replace()

    def _replace(self) -> None:
        old = self._proc
        with contextlib.suppress(OSError):
            os.close(self._bell)
        if old is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                old.wait(2.0)
        self._restarts += 1
        if self._restarts > _MAX_RESTARTS:
            self._bell = os.open(os.devnull, os.O_WRONLY)
            self._warn(
                f"warning: the recorder process ended {_MAX_RESTARTS} times; not starting "
                f"another: traffic is still journaled beside {self.db_path} "
                f"(bring it in with: acp-proxy import-spill --db {self.db_path})"
            )
            return
        self._warn("warning: the recorder process ended; a new one carries on from the journal")
        self._proc = None
        self._start()

    def _after_us(self) -> None:
        """The recorder died while we were closing: one more reads the rest of the
        journal after we are gone (or we say how to bring it in)."""
        with self.lock:
            self._replace()
            with contextlib.suppress(OSError):
                os.close(self._bell)  # nothing more to ring: it reads to the end, and ends
            self._bell = -1

    def close(self, wait: float = 0.5) -> None:
        """No more records. The recorder finishes on its own; wait up to ``wait`` seconds
        for it (an in-process recorder is always waited for)."""
        with self.lock:
            self._closed = True
            summary = self.journal.summary() if self.journal is not None else None
            if self.journal is not None:
                self.journal.close()
            if self._proc is not None and self._proc.poll() is not None:
                self._replace()  # it died since the last write: one more reads the rest
            with contextlib.suppress(OSError):
                os.close(self._bell)
            self._bell = -1
        if self._thread is not None:
            self._thread.join()
        elif self._proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(wait)
            if (self._proc.returncode or 0) < 0:  # killed before it was done
                self._after_us()
        if self._voice is not None:  # what it said until now is ours to pass on; the
            self._voice.close()  # rest goes beside the database (record.child)
        if summary:
            self._warn(summary)
        if self._late:
            self._warn(f"warning: {self._late} bytes read after recording ended: not recorded")

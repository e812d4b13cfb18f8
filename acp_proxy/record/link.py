"""The relay's side of recording: every byte is journaled before it is forwarded.

What belongs here: :class:`RecorderLink`, a relaying process's recording — its journal
(:mod:`acp_proxy.record.journal`) and the recorder process that follows it
(:mod:`acp_proxy.record.child`) — and :class:`Tap`, the relay's handle on one capture.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from acp_proxy.protocol.frames import Direction, Opcode
from acp_proxy.record.journal import JournalWriter
from acp_proxy.record.wire import HEADER, Flag, Stream, Type
from acp_proxy.store import liveness, private
from acp_proxy.store.db import now_iso

__all__ = ["CaptureMeta", "RecorderLink", "Tap"]

_MAX_RESTARTS = 5
_STREAM = {Direction.CLIENT_TO_AGENT: Stream.C2A, Direction.AGENT_TO_CLIENT: Stream.A2C}

Warn = Callable[[str], None]


def stderr_warn(message: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"acp-proxy: {message}\n")
        sys.stderr.flush()


@dataclass(slots=True)
class CaptureMeta:
    """What is known of a capture when it starts."""

    transport: str = "stdio"
    agent_command: list[str] | None = None
    cwd: str | None = None
    upstream_url: str | None = None
    listen_url: str | None = None
    label: str | None = None
    pid: int | None = None
    uid: str = field(default_factory=lambda: uuid.uuid4().hex)
    started_at: str = field(default_factory=now_iso)
    started_ns: int = field(default_factory=time.monotonic_ns)


class Tap:
    """The relay's handle on one capture. Thread-safe; each call writes one record."""

    __slots__ = (
        "_closed",
        "_last",
        "_rseq",
        "link",
        "meta",
        "number",
        "positions",
        "undelivered",
    )

    def __init__(self, link: RecorderLink, meta: CaptureMeta, number: int) -> None:
        self.link = link
        self.meta = meta
        self.number = number
        self.positions = {Stream.C2A: 0, Stream.A2C: 0, Stream.STDERR: 0}
        self.undelivered = {Stream.C2A: False, Stream.A2C: False}
        self._last = {Stream.C2A: 0, Stream.A2C: 0}  # where the latest chunk or message began
        self._rseq = 0
        self._closed = False

    def _send(
        self,
        type_: int,
        stream: int,
        flags: int,
        position: int,
        t_ns: int,
        payload: bytes,
    ) -> None:
        link = self.link
        with link.lock:
            self._rseq += 1
            head = HEADER.pack(
                len(payload), type_, stream, flags, self.number, self._rseq, position, t_ns
            )
            link.send_locked(head, payload)

    def _json(self, type_: int, body: dict[str, Any]) -> None:
        payload = orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS, default=str)
        self._send(type_, 0, 0, 0, time.monotonic_ns(), payload)

    def chunk(self, direction: Direction, data: bytes, t_ns: int | None = None) -> None:
        """Bytes read from a stdio stream, before they are written on."""
        s = _STREAM[direction]
        t = time.monotonic_ns() if t_ns is None else t_ns
        link = self.link
        with link.lock:
            self._rseq += 1
            pos = self._last[s] = self.positions[s]
            self.positions[s] = pos + len(data)
            flags = Flag.UNDELIVERED if self.undelivered[s] else 0
            head = HEADER.pack(len(data), Type.CHUNK, s, flags, self.number, self._rseq, pos, t)
            link.send_locked(head, data)

    def end_stream(self, direction: Direction) -> None:
        """The stream ended: a final line without ``\\n`` becomes an unterminated frame."""
        s = _STREAM[direction]
        self._send(Type.END, s, 0, self.positions[s], time.monotonic_ns(), b"")

    def message(
        self,
        direction: Direction,
        data: bytes,
        opcode: Opcode | None,
        t_ns: int | None = None,
        *,
        terminated: bool = False,
    ) -> None:
        """One whole message (WebSocket). ``terminated``: a stdio leg of a bridge carried it
        as a line ending in ``\\n``; ``opcode`` None: a piece of an over-long line."""
        s = _STREAM[direction]
        flags = 0
        if opcode is Opcode.BINARY:
            flags |= Flag.BINARY
        elif opcode is None:
            flags |= Flag.OVERSIZE
        if terminated:
            flags |= Flag.TERMINATED
        t = time.monotonic_ns() if t_ns is None else t_ns
        link = self.link
        with link.lock:
            if self.undelivered[s]:
                flags |= Flag.UNDELIVERED
            self._rseq += 1
            pos = self._last[s] = self.positions[s]
            self.positions[s] = pos + 1
            head = HEADER.pack(len(data), Type.MESSAGE, s, flags, self.number, self._rseq, pos, t)
            link.send_locked(head, data)

    def messages(self, direction: Direction, batch: list[tuple[Opcode, bytes, int]]) -> None:
        """Whole messages of one direction, read together (WebSocket, one network read):
        journaled in one write, as :meth:`message` journals one."""
        s = _STREAM[direction]
        link = self.link
        with link.lock:
            undelivered = Flag.UNDELIVERED if self.undelivered[s] else 0
            records = []
            rseq, pos, number = self._rseq, self.positions[s], self.number
            for opcode, data, t in batch:
                flags = undelivered | (Flag.BINARY if opcode is Opcode.BINARY else 0)
                rseq += 1
                records.append(
                    (HEADER.pack(len(data), Type.MESSAGE, s, flags, number, rseq, pos, t), data)
                )
                pos += 1
            self._rseq = rseq
            self._last[s] = pos - 1
            self.positions[s] = pos
            link.send_many_locked(records)

    def not_delivered(self, direction: Direction, position: int | None = None) -> None:
        """Writing to the peer failed: what was read from ``position`` (default: where the
        latest chunk or message began) on is recorded but was not delivered."""
        s = _STREAM[direction]
        if self.undelivered[s]:
            return
        self.undelivered[s] = True
        pos = self._last[s] if position is None else position
        self._send(Type.UNDELIVERED, s, 0, pos, time.monotonic_ns(), b"")

    def stderr(self, data: bytes, t_ns: int | None = None) -> None:
        t = time.monotonic_ns() if t_ns is None else t_ns
        link = self.link
        with link.lock:
            self._rseq += 1
            pos = self.positions[Stream.STDERR]
            self.positions[Stream.STDERR] = pos + len(data)
            head = HEADER.pack(
                len(data), Type.STDERR, Stream.STDERR, 0, self.number, self._rseq, pos, t
            )
            link.send_locked(head, data)

    def event(self, kind: str, **detail: Any) -> None:
        self._json(Type.EVENT, {"kind": kind, "detail": detail})

    def update(self, **fields: Any) -> None:
        """Set capture columns (pid, exit_code, ...)."""
        self._json(Type.UPDATE, fields)

    def close(self, **fields: Any) -> None:
        """End the capture: unfinished lines become frames, ``ended_at`` is set."""
        if self._closed:
            return
        self._closed = True
        fields.setdefault("ended_at", now_iso())
        fields.setdefault("ended_ns", time.monotonic_ns())
        fields["positions"] = {str(int(s)): p for s, p in self.positions.items()}
        self._json(Type.CLOSE, fields)
        self.link.closed(self)

    def open_payload(self) -> bytes:
        m = self.meta
        return orjson.dumps(
            {
                "uid": m.uid,
                "transport": m.transport,
                "agent_command": m.agent_command,
                "cwd": m.cwd,
                "upstream_url": m.upstream_url,
                "listen_url": m.listen_url,
                "pid": m.pid,
                "proxy_pid": os.getpid(),
                "proxy_start": self.link.identity,
                "started_at": m.started_at,
                "started_ns": m.started_ns,
                "label": m.label,
            },
            default=str,
        )


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
        if self.journal.broken:  # nothing to follow: no recorder, losses are counted
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
            try:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "acp_proxy.record.child", str(self.db_path),
                     self.journal_id],
                    stdin=r,
                    stdout=subprocess.DEVNULL,
                    stderr=None,
                    close_fds=True,
                    start_new_session=True,  # a Ctrl-C or a kill of our group spares it
                    env={**os.environ, **self._recorder_env} if self._recorder_env else None,
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
        if summary:
            self._warn(summary)
        if self._late:
            self._warn(f"warning: {self._late} bytes read after recording ended: not recorded")

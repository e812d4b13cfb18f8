"""The relay's side of recording: hand every byte to the recorder before it is forwarded.

What belongs here: :class:`RecorderLink`, a relaying process's connection to its recorder
process (:mod:`acp_proxy.record.child`) — one pipe, records in the wire format — and
:class:`Tap`, the relay's handle on one capture. ``Tap.chunk`` writes the chunk into the
pipe, and only then does the relay forward it: the bytes are in a kernel buffer the
recorder reads, so they are recorded even if this process is killed the next moment
(docs/recording.md). That write is the relay's only recording work per chunk.

The recorder never holds the relay up: it empties the pipe as fast as it fills. If it dies,
or stops reading for ``stall_timeout`` seconds, a new one is started and told which captures
are open; each record carries its stream position, so the new recorder writes down exactly
what the old one did not get to keep.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import signal
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
from acp_proxy.record.wire import HEADER, Flag, Stream, Type
from acp_proxy.store import liveness, private

__all__ = ["CaptureMeta", "RecorderLink", "Tap", "now_iso"]

_PIPE_SIZE = 1 << 20
_F_SETPIPE_SZ = 1031
_STALL_S = 5.0
_MAX_RESTARTS = 5
_KEEP_CLOSED = 32  # closed captures still told to a new recorder (late bytes may follow)
_STREAM = {Direction.CLIENT_TO_AGENT: Stream.C2A, Direction.AGENT_TO_CLIENT: Stream.A2C}

Warn = Callable[[str], None]


def now_iso() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


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
    """A relaying process's recorder: started at once, written to before forwarding."""

    def __init__(
        self,
        db_path: Path,
        *,
        warn: Warn = stderr_warn,
        in_process: bool = False,
        stall_timeout: float = _STALL_S,
    ) -> None:
        self.db_path = Path(db_path)
        self.lock = threading.Lock()
        self.identity = liveness.identity()
        self._warn = warn
        self._stall = stall_timeout
        self._fd = -1
        self._proc: subprocess.Popen[bytes] | None = None
        self._thread: threading.Thread | None = None
        self._taps: dict[int, Tap] = {}
        self._closed_taps: list[Tap] = []
        self._next = 1
        self._restarts = 0
        self._broken = False  # no recorder could be kept running: stop trying
        self._dropped = 0
        if os.environ.get("ACP_PROXY_RECORDER") == "thread":
            in_process = True
        self._in_process = in_process
        problem = private.refusal(self.db_path)
        self.refused = problem is not None
        if problem is not None:
            # forwarding goes on (an editor's session must not fail for it), nothing is
            # recorded: the database is not ours alone (acp_proxy.store.private)
            self._broken = True
            self._warn(f"warning: not recording: {problem}; traffic is still forwarded")
            return
        self._start()

    # -- captures ------------------------------------------------------------------------

    def open_capture(self, meta: CaptureMeta) -> Tap:
        with self.lock:
            tap = Tap(self, meta, self._next)
            self._next += 1
            self._taps[tap.number] = tap
            payload = tap.open_payload()
            self.send_locked(HEADER.pack(len(payload), Type.OPEN, 0, 0, tap.number, 0, 0,
                                         time.monotonic_ns()), payload)  # fmt: skip
            return tap

    def closed(self, tap: Tap) -> None:
        with self.lock:
            self._taps.pop(tap.number, None)
            self._closed_taps.append(tap)
            del self._closed_taps[:-_KEEP_CLOSED]

    # -- the recorder --------------------------------------------------------------------

    @property
    def recorder_pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def _start(self) -> None:
        r, w = os.pipe()
        with contextlib.suppress(OSError):
            fcntl.fcntl(w, _F_SETPIPE_SZ, _PIPE_SIZE)
        proc = None
        if not self._in_process:
            try:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "acp_proxy.record.child", str(self.db_path)],
                    stdin=r,
                    stdout=subprocess.DEVNULL,
                    stderr=None,
                    close_fds=True,
                    start_new_session=True,  # a Ctrl-C or a kill of our group spares it
                )
            except OSError as e:
                self._warn(f"warning: cannot start the recorder process ({e}); recording here")
        if proc is not None:
            os.close(r)
            self._proc = proc
        else:
            from acp_proxy.record.recorder import Recorder

            recorder = Recorder(self.db_path, r, warn=self._warn)

            def run() -> None:
                try:
                    recorder.run()
                finally:
                    os.close(r)

            self._thread = threading.Thread(target=run, name="acp-proxy-recorder")
            self._thread.start()
            self._in_process = True
        os.set_blocking(w, False)
        self._fd = w

    def send_locked(self, head: bytes, payload: bytes) -> None:
        """Write one record (the caller holds :attr:`lock`)."""
        if self._broken:
            self._dropped += len(payload)
            return
        total = len(head) + len(payload)
        try:
            n = os.writev(self._fd, (head, payload))
        except BlockingIOError:
            n = 0
        except OSError:
            self._replace("the recorder process ended")
            self.send_locked(head, payload)
            return
        if n != total:  # rare: the pipe is full
            self._write_rest(head, payload, n)

    def _write_rest(self, head: bytes, payload: bytes, done: int) -> None:
        data = memoryview(head + payload)
        deadline = time.monotonic() + self._stall
        poller = select.poll()
        poller.register(self._fd, select.POLLOUT)
        while done < len(data):
            left = deadline - time.monotonic()
            if left <= 0:
                self._replace(f"the recorder read nothing for {self._stall:.0f} s")
                self.send_locked(head, payload)  # whole again: the new pipe is empty
                return
            poller.poll(left * 1000)
            try:
                n = os.write(self._fd, data[done:])
            except BlockingIOError:
                continue
            except OSError:
                self._replace("the recorder process ended")
                self.send_locked(head, payload)
                return
            done += n
            deadline = time.monotonic() + self._stall

    def _replace(self, why: str) -> None:
        """Start a new recorder and tell it which captures are open (the caller holds the
        lock). The loss is worked out by the new one from the positions."""
        old = self._proc
        with contextlib.suppress(OSError):
            os.close(self._fd)
        if old is not None:
            with contextlib.suppress(ProcessLookupError):
                old.send_signal(signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                old.wait(2.0)
        self._restarts += 1
        if self._restarts > _MAX_RESTARTS:
            self._broken = True
            self._warn(
                f"warning: {why}; after {_MAX_RESTARTS} restarts recording has stopped; "
                "traffic is still forwarded"
            )
            return
        self._warn(f"warning: {why}; starting a new one (what it had not stored is a gap)")
        self._proc = None
        self._start()
        for tap in [*self._closed_taps, *self._taps.values()]:
            payload = tap.open_payload()
            head = HEADER.pack(len(payload), Type.OPEN, 0, Flag.RESUME, tap.number, 0, 0,
                               time.monotonic_ns())  # fmt: skip
            self.send_locked(head, payload)

    def close(self, wait: float = 2.0) -> None:
        """No more records. The recorder finishes on its own; wait up to ``wait`` seconds
        for it (an in-process recorder is always waited for)."""
        with self.lock:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1
            self._broken = True
        if self._thread is not None:
            self._thread.join()
        elif self._proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(wait)
        if self._dropped and not self.refused:
            self._warn(f"warning: {self._dropped} bytes read after recording ended: not recorded")

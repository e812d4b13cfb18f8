"""The recorder's input: records read from the relay's pipe as fast as they come (layer 2).

What belongs here: :class:`Inbox`, a reader thread that empties the pipe into a queue the
database side takes from, so the relay never waits for SQLite. The queue is a FIFO that
lives in memory up to a limit and then continues in an overflow file next to the database
(a spill file: the same records, :mod:`acp_proxy.record.wire`); the consumer reads that file
back when it has caught up with memory. When even the file cannot be written (a full disk),
records are dropped and the loss is kept exactly — capture, stream, byte range, lines — as a
``LOST`` record put back in order, and in a small preallocated ledger file, so it is
written down even if the database never becomes writable while this recorder runs.

The pipe is only ever blocked on by :func:`os.read`: nothing here waits for the consumer.
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import os
import threading
from collections.abc import Callable
from pathlib import Path

import orjson

from acp_proxy.record import spill
from acp_proxy.record.wire import Record, RecordReader, Stream, Type, encode

__all__ = ["Inbox"]

READ_SIZE = 1 << 20
DEFAULT_MEMORY = 16 * 1024 * 1024

Warn = Callable[[str], None]


_DATA = (Type.CHUNK, Type.MESSAGE, Type.STDERR)


def _frames_in(r: Record) -> int:
    if r.type == Type.CHUNK:
        return r.payload.count(b"\n")
    return 1 if r.type == Type.MESSAGE else 0


class _Loss:
    """Records dropped for one stream of one capture, since the last one kept."""

    __slots__ = ("end", "frames", "start")

    def __init__(self, start: int) -> None:
        self.start = start
        self.end = start
        self.frames = 0


class Inbox:
    """Records from ``fd`` in order; :meth:`get` hands them out, oldest first."""

    def __init__(
        self,
        fd: int,
        db_path: Path,
        *,
        recorder_id: str,
        memory_limit: int = DEFAULT_MEMORY,
        warn: Warn,
        on_end: Callable[[], None] | None = None,
    ) -> None:
        self._fd = fd
        self._db_path = Path(db_path)
        self._rid = recorder_id
        self._limit = memory_limit
        self._warn = warn
        self._on_end = on_end
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._memory: collections.deque[Record] = collections.deque()
        self._memory_bytes = 0
        self._eof = False
        self._opens: dict[int, dict[str, object]] = {}
        # overflow file: written by the reader thread, read back by the consumer
        self._file: spill.Writer | None = None
        self._file_reader: spill.Reader | None = None
        self._losses: dict[tuple[int, int], _Loss] = {}
        self._seq = 0  # overflow files of this recorder, numbered in stream order
        self._said_full = False
        self.lost_frames = 0
        self.lost_bytes = 0
        self._ledger = spill.Ledger(db_path, recorder_id)
        self._thread = threading.Thread(target=self._run, name="acp-proxy-inbox", daemon=True)

    def start(self) -> None:
        self._ledger.reserve()
        self._thread.start()

    # -- the reader thread ---------------------------------------------------------------

    def _run(self) -> None:
        reader = RecordReader()
        while True:
            try:
                data = os.read(self._fd, READ_SIZE)
            except InterruptedError:  # pragma: no cover - PEP 475 retries for us
                continue
            except OSError:
                data = b""
            if not data:
                break
            self._put(reader.feed(data))
        cut = reader.cut()
        with self._lock:
            if cut:
                self._warn(f"the relay stopped in the middle of a record ({cut} bytes dropped)")
            self._eof = True
            self._emit_losses_locked(force=True)
            self._ready.notify_all()
        if self._on_end is not None:
            self._on_end()

    def _put(self, records: list[Record]) -> None:
        if not records:
            return
        with self._lock:
            for r in records:
                if r.type == Type.OPEN:
                    meta = _json(r.payload)
                    if meta:
                        self._opens[r.capture] = meta
            size = sum(len(r.payload) for r in records)
            if self._file is None and self._memory_bytes + size <= self._limit:
                self._memory.extend(records)
                self._memory_bytes += size
            else:
                self._overflow_locked(records)
            self._ready.notify_all()

    def _overflow_locked(self, records: list[Record]) -> None:
        if self._file is None and not self._losses:
            try:
                self._seq += 1
                self._file = spill.Writer.create(
                    self._db_path, self._rid, self._opens, seq=self._seq
                )
            except OSError as e:
                self._warn(
                    f"warning: recording is behind and cannot overflow to disk ({e.strerror}); "
                    "what does not fit in memory is dropped and counted"
                )
        kept = 0
        if self._file is not None:
            try:
                if self._losses:
                    self._emit_losses_locked(force=False)
                for r in records:
                    self._file.write(encode(r))
                    kept += 1
            except OSError as e:
                if not self._losses and not self._said_full:
                    self._said_full = True
                    self._warn(
                        f"warning: cannot write {self._file.path} ({e.strerror}); "
                        "traffic is still forwarded; what cannot be kept is counted as lost"
                    )
        for r in records[kept:]:
            self._drop_locked(r)

    def _drop_locked(self, r: Record) -> None:
        if r.type not in _DATA:
            return  # events and updates are small; their loss is covered by the gap
        size = 1 if r.type == Type.MESSAGE else len(r.payload)
        frames = _frames_in(r)
        key = (r.capture, r.stream)
        loss = self._losses.get(key)
        if loss is None:
            loss = self._losses[key] = _Loss(r.position)
        loss.end = r.position + size
        loss.frames += frames
        self.lost_frames += frames if r.stream != Stream.STDERR else 0
        self.lost_bytes += len(r.payload)
        self._ledger.note(self._opens.get(r.capture), r.stream, r.position, loss.end, frames)

    def _emit_losses_locked(self, *, force: bool) -> None:
        """Put the losses back in the queue, in order, as ``LOST`` records."""
        if not self._losses:
            return
        lost = [
            Record(
                Type.LOST,
                stream,
                0,
                capture,
                0,
                loss.start,
                0,
                orjson.dumps(
                    {
                        "start": loss.start,
                        "end": loss.end,
                        "frames": loss.frames,
                        "reason": "disk full: not stored",
                    }
                ),
            )
            for (capture, stream), loss in self._losses.items()
        ]
        if self._file is not None and not force:
            self._file.write(b"".join(encode(r) for r in lost))  # may raise: kept for later
        else:
            self._memory.extend(lost)
        self._losses.clear()

    # -- the consumer ----------------------------------------------------------------------

    def get(self, timeout: float | None, max_bytes: int = 8 << 20) -> list[Record] | None:
        """Records in order, up to about ``max_bytes``; ``[]`` when none came within
        ``timeout``; ``None`` once the input has ended and everything was handed out."""
        with self._lock:
            if not self._memory and self._file is None and not self._eof:
                self._ready.wait(timeout)
            if self._memory:
                out: list[Record] = []
                n = 0
                while self._memory and n < max_bytes:
                    r = self._memory.popleft()
                    out.append(r)
                    n += len(r.payload)
                self._memory_bytes -= n
                return out
            if self._file is None:
                if self._eof:
                    return None
                return []
            current = self._file
            reader = self._file_reader
            if reader is None or reader.path != current.path:
                reader = self._file_reader = spill.Reader(current.path)
            written = current.written
        records = reader.read(written, max_bytes)  # outside the lock: the reader goes on
        with self._lock:
            if reader.offset >= self._file.written and self._file is current:
                # caught up with the file: back to memory (losses, if any, come first)
                current.close()
                reader.close()
                with contextlib.suppress(OSError):
                    current.path.unlink()
                self._file = None
                self._file_reader = None
                self._emit_losses_locked(force=True)
        return records

    def drain_to_spill(self, head: list[Record]) -> tuple[list[Path], int, int]:
        """At the end, with the database unwritable: ``head`` (what the consumer holds,
        in order) and everything not handed out yet, into a spill file that sorts before
        the overflow file, if there is one (left as it is: importing it again from its
        start is harmless, positions make imports idempotent). What cannot be written is
        noted in the ledger. Returns the spill files, and the frames and bytes lost."""
        with self._lock:
            rest = list(self._memory)
            self._memory.clear()
            self._memory_bytes = 0
            tail = self._file
            self._file = None
            self._emit_losses_locked(force=True)
            rest += list(self._memory)  # losses not yet handed out, in order
            self._memory.clear()
        if tail is not None:
            tail.close()
        if self._file_reader is not None:
            self._file_reader.close()
        records = [*head, *rest]
        files = [tail.path] if tail is not None else []
        if not records:
            return files, 0, 0
        written = 0
        try:
            out = spill.Writer.create(self._db_path, self._rid, self._opens, seq=0)
        except OSError:
            out = None
        if out is not None:
            files.insert(0, out.path)
            try:
                for r in records:
                    out.write(encode(r))
                    written += 1
            except OSError:
                pass
            finally:
                out.close()
        frames = size = 0
        for r in records[written:]:  # not written anywhere: the ledger keeps the loss
            if r.type in _DATA:
                n = 1 if r.type == Type.MESSAGE else len(r.payload)
                f = _frames_in(r) if r.stream != Stream.STDERR else 0
                meta = self._opens.get(r.capture)
                self._ledger.note(meta, r.stream, r.position, r.position + n, f)
                frames += f
                size += len(r.payload)
        return files, frames, size

    def can_spill(self) -> bool:
        """Whether files can be written beside the database (the ledger could be)."""
        return self._ledger.reserved

    def finished(self, *, all_written: bool) -> None:
        """The recorder is done; ``all_written``: the losses are in the database."""
        if all_written:
            self._ledger.remove()
        else:
            self._ledger.close()

    @property
    def ended(self) -> bool:
        """The input has ended (everything may not have been handed out yet)."""
        with self._lock:
            return self._eof

    @property
    def opens(self) -> dict[int, dict[str, object]]:
        with self._lock:
            return dict(self._opens)


def _json(payload: bytes) -> dict[str, object]:
    try:
        v = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return {}
    return v if isinstance(v, dict) else {}


def _lock_exclusive(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

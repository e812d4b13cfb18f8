"""The journal: where a relay puts every byte before forwarding it.

What belongs here: the files that carry records (:mod:`acp_proxy.record.core.wire`) from a
relaying process to its recorder — their names and positions, and writing them
(:class:`JournalWriter`, in the relay). Following them, with the doorbell pipe that says
"more was written" and, when it closes, "the relay is gone", is
:mod:`acp_proxy.record.follow` (in the recorder).

A journal is a sequence of segment files next to the database,
``<db>.journal.<journal>.<n>.acp`` (mode 0600; their names and locks are
:mod:`acp_proxy.record.spill`'s). The relay appends each record with one
``writev`` — a write into the page cache, which never waits for the recorder and outlives
the relay's process (so what was forwarded is recorded even after a SIGKILL) — and starts
a new segment past a size, ending the old one with a ``NEXT`` record. The recorder reads
them in order, commits rows together with how far it has read, and deletes segments it
has finished. A journal nobody holds any more (its relay and recorder are gone, say the
database could not be written) is left behind: the next recorder, or ``import-spill``,
brings it in.

When a write fails (a full disk), the relay forwards anyway and keeps the loss — capture,
stream, exact range, lines — to write as a ``LOST`` record as soon as the journal takes
writes again, and in the ledger reserved at start (:mod:`acp_proxy.record.spill`).
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from acp_proxy.record import spill
from acp_proxy.record.core.wire import HEADER, Stream, Type
from acp_proxy.record.ledger import Ledger

__all__ = ["JournalWriter", "position", "split_position"]

SEGMENT_BYTES = 64 * 1024 * 1024
_IOV_RECORDS = 500  # two buffers a record, under the kernel's 1024 per writev
_SEQ_BITS = 40  # a position is (segment << 40) | offset: one integer, ordered

Warn = Callable[[str], None]


def position(seq: int, offset: int) -> int:
    """A place in a journal as one ordered integer."""
    return (seq << _SEQ_BITS) | offset


def split_position(pos: int) -> tuple[int, int]:
    return pos >> _SEQ_BITS, pos & ((1 << _SEQ_BITS) - 1)


def _data_size(type_: int, payload_len: int) -> int:
    """How far a record moves its stream's position."""
    if type_ == Type.MESSAGE:
        return 1
    return payload_len if type_ in (Type.CHUNK, Type.STDERR) else 0


def _make_dirs(directory: Path) -> None:
    """Create ``directory`` and any missing parent, each 0700 (recordings hold secrets)."""
    missing = []
    d = directory
    while not d.exists():
        missing.append(d)
        d = d.parent
    for m in reversed(missing):
        os.mkdir(m, 0o700)


def _reason(e: OSError, path: Path) -> str:
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                return f"{parent} is not a directory"
            break
    return e.strerror or str(e)


class _Loss:
    __slots__ = ("end", "frames", "start")

    def __init__(self, start: int) -> None:
        self.start = self.end = start
        self.frames = 0


class JournalWriter:
    """The relay's end. Not thread-safe: the caller serialises writes (one lock)."""

    def __init__(
        self,
        db_path: Path,
        journal: str,
        *,
        warn: Warn,
        segment_bytes: int = SEGMENT_BYTES,
    ) -> None:
        self.db_path = Path(db_path)
        self.journal = journal
        self._warn = warn
        self._limit = segment_bytes
        self.seq = -1
        self._fd = -1
        self._size = 0
        self._rest = b""  # the unwritten rest of a record a full disk cut
        self._cut_record: tuple[bytes, bytes] | None = None
        self._losses: dict[tuple[int, int], _Loss] = {}
        self._metas: dict[int, dict[str, Any]] = {}
        self.lost_frames = 0
        self.lost_bytes = 0
        self._failing: str | None = None
        self._said = False
        self.broken = False  # the journal could not even be started
        self.ledger = Ledger(self.db_path, journal)
        self.ledger.reserve()
        self._lock = spill.hold_journal(self.db_path, journal)
        self._open_next()

    @property
    def path(self) -> Path:
        return spill.segment_path(self.db_path, self.journal, self.seq)

    def _open_next(self) -> None:
        """Start the next segment; the current one (if any) ends with a ``NEXT`` record."""
        seq = self.seq + 1
        path = spill.segment_path(self.db_path, self.journal, seq)
        try:
            _make_dirs(path.parent)
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_APPEND, 0o600)
        except OSError as e:
            if seq == 0:  # not even the first: nothing of this relay can be recorded
                self._fail(
                    f"cannot record into {self.db_path} ({_reason(e, path)}); traffic is still "
                    "forwarded but NOT recorded",
                    full=True,
                )
                self.broken = True
            else:
                self._fail(f"cannot create {path}: {_reason(e, path)}")
            return
        self.broken = False
        old = self._fd
        if old >= 0:
            nxt = HEADER.pack(0, Type.NEXT, 0, 0, 0, 0, seq, 0)
            try:
                os.write(old, nxt)
            except OSError:
                os.close(fd)
                os.unlink(path)
                raise
            os.close(old)
        self._fd, self.seq, self._size = fd, seq, 0

    def declare(self, number: int, meta: dict[str, Any]) -> None:
        """What is known of capture ``number``, for the ledger."""
        self._metas[number] = meta

    def write(self, head: bytes, payload: bytes) -> bool:
        """Append one record whole; False when it could not be (the loss is kept)."""
        if self._losses and not self._write_losses():
            self._lose(head, payload)
            return False
        if not self._append(head, payload):
            self._lose(head, payload)
            return False
        if self._size >= self._limit and not self._rest:
            with contextlib.suppress(OSError):
                self._open_next()
        return True

    def write_many(self, records: list[tuple[bytes, bytes]]) -> None:
        """Append records in order, as few system calls as possible; what cannot be
        written is kept as a loss, record by record, exactly as :meth:`write` does."""
        if self._losses or self._rest or self._fd < 0 or len(records) == 1:
            for head, payload in records:
                self.write(head, payload)
            return
        for i in range(0, len(records), _IOV_RECORDS):
            group = records[i : i + _IOV_RECORDS]
            iov = [part for record in group for part in record]
            total = sum(map(len, iov))
            try:
                n = os.writev(self._fd, iov)
            except OSError:
                n = -1
            if n != total:  # out of space part way: what was written stays (see _append)
                done = max(n, 0)
                at = 0
                for k, (head, payload) in enumerate(group):
                    size = len(head) + len(payload)
                    if at + size <= done:
                        at += size
                        continue
                    if done > at:  # this record was cut: its rest goes first, later
                        self._cut(head, payload, done - at)
                        k += 1
                    for h, p in records[i + k :]:
                        self.write(h, p)
                    break
                self._size += at
                return
            self._size += total
            if self._size >= self._limit:
                with contextlib.suppress(OSError):
                    self._open_next()
                for head, payload in records[i + _IOV_RECORDS :]:
                    self.write(head, payload)
                return

    def _append(self, head: bytes, payload: bytes) -> bool:
        if self._fd < 0:
            self._open_next()
            if self._fd < 0:
                return False
        if self._rest and not self._write_rest():
            return False
        total = len(head) + len(payload)
        try:
            n = os.writev(self._fd, (head, payload))
        except OSError as e:
            self._fail(f"cannot write {self.path}: {e.strerror}")
            return False
        if n != total:
            # Out of space part way. What was written stays: the recorder may have read it
            # already, so cutting the file back would change bytes under it. The rest of
            # the record is written first once there is room; if there never is, the
            # record is counted lost when the journal closes.
            self._cut(head, payload, n)
            self._fail(f"cannot write {self.path}: {os.strerror(errno.ENOSPC)}")
            return True
        self._size += total
        self._failing = None
        return True

    def _cut(self, head: bytes, payload: bytes, written: int) -> None:
        self._size += written
        self._rest = (head + payload)[written:]
        self._cut_record = (head, payload)

    def _write_rest(self) -> bool:
        """Finish the record a full disk cut; False while there is still no room."""
        try:
            n = os.write(self._fd, self._rest)
        except OSError:
            return False
        self._size += n
        self._rest = self._rest[n:]
        if self._rest:
            return False
        self._cut_record = None
        return True

    def _fail(self, why: str, *, full: bool = False) -> None:
        """Say it once; :meth:`summary` gives the count at the end."""
        if not self._said:
            self._said = True
            self._warn(
                f"warning: {why}"
                if full
                else f"warning: {why}; traffic is still forwarded; what cannot be recorded "
                "is counted and written down as lost"
            )
        self._failing = why

    def summary(self) -> str | None:
        """One line on what could not be recorded, or None when everything was."""
        if not (self.lost_frames or self.lost_bytes):
            return None
        where = f"; the loss is noted in {self.ledger.path}" if self.ledger.reserved else ""
        return (
            f"warning: {self.lost_frames} frames ({self.lost_bytes} bytes) were forwarded but "
            f"could not be recorded{where}"
        )

    def _lose(self, head: bytes, payload: bytes) -> None:
        _, type_, stream, _, capture, _, pos, _ = HEADER.unpack_from(head)
        size = _data_size(type_, len(payload))
        if type_ == Type.CLOSE:  # how the capture ended must not read as a killed proxy
            with contextlib.suppress(orjson.JSONDecodeError):
                body = orjson.loads(payload)
                if isinstance(body, dict):
                    self.ledger.closed(self._metas.get(capture), body)
        if not size:
            return  # events and updates are small; the gap covers what they were about
        key = (capture, stream)
        loss = self._losses.get(key)
        if loss is None:
            loss = self._losses[key] = _Loss(pos)
        loss.start = min(loss.start, pos)  # a cut record is counted at the end, and first
        loss.end = max(loss.end, pos + size)
        frames = 1 if type_ == Type.MESSAGE else payload.count(b"\n")
        if stream == Stream.STDERR:
            frames = 0
        loss.frames += frames
        self.lost_frames += frames
        self.lost_bytes += len(payload)
        self.ledger.note(self._metas.get(capture), stream, pos, pos + size, frames)

    def _write_losses(self) -> bool:
        """Write the losses as ``LOST`` records, in order, before anything newer."""
        for (capture, stream), loss in list(self._losses.items()):
            body = orjson.dumps(
                {
                    "start": loss.start,
                    "end": loss.end,
                    "frames": loss.frames,
                    "reason": "could not be written (disk full?)",
                }
            )
            head = HEADER.pack(len(body), Type.LOST, stream, 0, capture, 0, loss.start, 0)
            if not self._append(head, body):
                return False
            del self._losses[(capture, stream)]
            uid = (self._metas.get(capture) or {}).get("uid")
            self.ledger.forget(uid, stream, loss.start, loss.end, loss.frames)
        return True

    def close(self) -> None:
        """No more records: losses are written if they can be; the ledger is kept only
        when some are still not in the journal."""
        if self._rest and self._fd >= 0:
            self._write_rest()
        abandoned = self._cut_record is not None
        if abandoned:  # never finished: the journal ends with its cut, and nothing after it
            assert self._cut_record is not None
            head, payload = self._cut_record
            self._cut_record, self._rest = None, b""
            self._lose(head, payload)
        if self._losses and not abandoned:
            self._write_losses()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self.ledger.close()  # kept only when it holds what the journal could not
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

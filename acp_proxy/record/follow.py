"""Following a journal: the recorder's end of what a relay writes.

What belongs here: :class:`JournalReader`, which reads records (:mod:`acp_proxy.record.core.wire`)
in order from a position on, across the journal's segments
(:mod:`acp_proxy.record.journal`), waits on the doorbell pipe for more, and ends once the
doorbell is closed (the relay is gone) and everything was read. Its :attr:`position` is
always a record boundary: where a recorder starting over must read from.
"""

from __future__ import annotations

import os
import select
from pathlib import Path
from typing import Any

from acp_proxy.record.core.wire import HEADER_SIZE, Record, RecordReader, Type
from acp_proxy.record.journal import position, split_position
from acp_proxy.record.spill import segment_path

__all__ = ["JournalReader"]

# What the recorder reads at a time: one transaction's worth. Larger batches save little
# (a commit is cheap next to 10 000 inserts) and cost memory.
READ_BYTES = 2 * 1024 * 1024


class JournalReader:
    """The recorder's end: records in order from ``start`` on, across segments; waits on
    the doorbell ``bell`` (a pipe) for more, and ends once it is closed and read out."""

    def __init__(self, db_path: Path, journal: str, bell: int | None, start: int = 0) -> None:
        self.db_path = Path(db_path)
        self.journal = journal
        self._bell = bell
        self.seq, offset = split_position(start)
        self._f: Any = None
        self._reader = RecordReader()
        self.offset = offset  # where the next unread byte of the current segment is
        self._bell_open = bell is not None
        self.cut = 0
        self.read_bytes = 0  # read so far, in all

    @property
    def position(self) -> int:
        return position(self.seq, self.offset - self._reader.pending)

    @property
    def bell_open(self) -> bool:
        """Whether the writer may still write (its doorbell has not closed yet)."""
        if self._bell_open:
            self._wait(0)
        return self._bell_open

    def _open(self) -> bool:
        if self._f is not None:
            return True
        path = segment_path(self.db_path, self.journal, self.seq)
        try:
            self._f = open(path, "rb")  # noqa: SIM115 - kept open across reads
        except FileNotFoundError:
            return False
        self._f.seek(self.offset)
        return True

    def read(
        self, max_bytes: int = READ_BYTES, timeout: float | None = None
    ) -> list[tuple[int, Record]] | None:
        """The next records with their positions; ``[]`` when nothing came within
        ``timeout``; None once the writer is gone and everything was read."""
        while True:
            out = self._read_some(max_bytes)
            if out:
                return out
            if not self._bell_open:
                return None  # the writer is gone and the journal is read to its end
            if not self._wait(timeout):
                return []

    def _read_some(self, max_bytes: int) -> list[tuple[int, Record]]:
        """Whole records from what is there now; [] only when nothing more is there (a
        long record is read on until it is whole or the file ends)."""
        while True:
            if not self._open():
                return []
            out = self._read_once(max_bytes)
            if out is None:
                return []
            if out:
                return out

    def _read_once(self, max_bytes: int) -> list[tuple[int, Record]] | None:
        data = self._f.read(max_bytes)
        if not data:
            return None
        base = self.offset - self._reader.pending
        self.offset += len(data)
        self.read_bytes += len(data)
        out: list[tuple[int, Record]] = []
        pos = base
        for r in self._reader.feed(data):
            if r.type == Type.NEXT:
                self._next_segment(r.position)
                return out
            out.append((position(self.seq, pos), r))
            pos += HEADER_SIZE + len(r.payload)
        return out

    def _next_segment(self, seq: int) -> None:
        self._f.close()
        self._f = None
        self._reader = RecordReader()
        self.seq, self.offset = seq, 0

    def _wait(self, timeout: float | None) -> bool:
        """Wait for the doorbell; False on timeout. A closed doorbell ends the input."""
        assert self._bell is not None
        ready, _, _ = select.select([self._bell], [], [], timeout)
        if not ready:
            return False
        try:
            rang = os.read(self._bell, 65536)
        except OSError:
            rang = b""
        if not rang:
            self._bell_open = False
        return True

    def finish(self) -> int:
        """At the end: bytes of an incomplete last record (a journal cut short)."""
        self.cut = self._reader.cut()
        return self.cut

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None

    def remove_before(self, pos: int) -> None:
        """Delete the segments wholly before ``pos`` (their rows are committed)."""
        seq, _ = split_position(pos)
        for old in range(seq - 1, -1, -1):
            path = segment_path(self.db_path, self.journal, old)
            try:
                path.unlink()
            except FileNotFoundError:
                break

"""A recorder: a relay's journal into the database, whatever happens.

What belongs here: :class:`Recorder`, which follows a relay's journal
(:class:`~acp_proxy.record.follow.JournalReader`), turns its records into rows with the
pure :class:`~acp_proxy.record.core.machine.Core`, and commits them with how far the journal has
been read (:class:`~acp_proxy.record.sqlite.Database`). The journal holds everything
until it is committed, so the recorder never has to drop anything: when
the database does not take a batch (a lock, a full disk) the batch is retried, and if the
relay is gone and the database still refuses, the journal is left as a spill file for the
next recorder or ``import-spill`` (:mod:`acp_proxy.record.imports`).

It runs in its own process (:mod:`acp_proxy.record.child`) or, as a fallback, in a thread.
What it commits is indexed for search beside it (:mod:`acp_proxy.record.follower`), and it
waits for that, briefly, before it exits.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from acp_proxy import events
from acp_proxy.errors import StoreError
from acp_proxy.protocol.jsonrpc import Info, Kind
from acp_proxy.record import spill
from acp_proxy.record.checkpoint import Checkpointer, beside
from acp_proxy.record.core.machine import Core
from acp_proxy.record.core.rows import FrameRow, Row
from acp_proxy.record.core.state import Resume
from acp_proxy.record.core.wire import Record
from acp_proxy.record.follow import JournalReader
from acp_proxy.record.follower import Follower, finish_s
from acp_proxy.record.imports import import_ledger, import_spills
from acp_proxy.record.ledger import ledger_files
from acp_proxy.record.spill import segment_path
from acp_proxy.record.sqlite import Database
from acp_proxy.settings import number
from acp_proxy.store import liveness
from acp_proxy.store.db import now_iso

__all__ = ["Recorder"]

Warn = Callable[[str], None]
# fewer records and bytes than these in a batch: sparse traffic, wait a moment for more (a
# flood comes in records of many lines: a few of them are no trickle)
_SPARSE, _SPARSE_BYTES = 64, 64 * 1024
_COALESCE_S = 0.003
_COLLECT_EVERY_S = 10.0  # when the child turned automatic collection off
_RETRY_S = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0)
# After the relay is gone, how long a locked database is waited for before leaving the
# journal as a spill file.
_PATIENCE_S = number("ACP_PROXY_RECORDER_PATIENCE", 10)
# Our own writers wait for each other's short transactions all the time: a lock is news only
# once it has lasted this long.
_QUIET_LOCK_S = number("ACP_PROXY_RECORDER_QUIET_LOCK", 5)


class Recorder:
    """Records journal ``journal`` (doorbell ``bell``) into ``db_path`` until the relay is
    gone and everything it wrote is in the database."""

    def __init__(
        self,
        db_path: Path,
        journal: str,
        bell: int,
        *,
        warn: Warn,
        observer: Callable[[list[Row]], None] | None = None,
    ) -> None:
        self.db_path = Path(db_path)
        self.journal = journal
        self._bell = bell
        self._warn = warn
        self._notes: list[str] = []  # said once nobody reads our stderr: for the events
        self._observer = observer  # sees each batch once it is committed (live spans)
        self.db: Database | None = None
        self.core = Core(lookup=self._lookup)
        self._rows: list[Row] = []  # made by the core, not yet committed
        self._checkpointer: Checkpointer | None = None
        self._failing: str | None = None
        self._failing_since = 0.0
        self._said_failing = False
        self._retry = 0
        self._next_try = 0.0
        self._identity = liveness.identity()
        self._reader: JournalReader | None = None
        self._position = 0  # where the journal has been read to
        self._ended_at: float | None = None
        self._collected = time.monotonic()
        self._follower: Follower | None = None

    # -- the loop ------------------------------------------------------------------------

    def run(self) -> int:
        """Record until the relay is gone; 0 when everything reached the database."""

        while self.db is None:
            self._open_db()
            if self.db is None and not self._wait_for_db():
                return self._leave("the database could not be opened")
        assert self.db is not None
        hold = spill.hold_journal(self.db_path, self.journal)
        import_spills(self.db, warn=self._warn, skip=self.journal)
        start = self.db.journal_position(self.journal) or 0
        reader = self._reader = JournalReader(self.db_path, self.journal, self._bell, start)
        self._position = start
        self._checkpointer = beside(self.db.path, self.db.conn)
        follower = self._follower = Follower(self.db_path, finish_s())
        done = False
        try:
            while True:
                if self._rows and not self._try_commit():
                    if self._relay_gone() and self._given_up():
                        return self._leave(self._failing or "the database refused")
                    time.sleep(max(0.01, self._next_try - time.monotonic()))
                    continue
                before = reader.read_bytes
                batch = reader.read(timeout=0)
                if batch == []:  # idle: a moment to collect cycles, then wait for more
                    self._collect_when_idle()
                    batch = reader.read(timeout=None)
                if batch is None:
                    break
                if len(batch) < _SPARSE and reader.read_bytes - before < _SPARSE_BYTES:
                    time.sleep(_COALESCE_S)  # sparse traffic: batch what follows with it
                    batch += reader.read(timeout=0) or []
                self._feed(batch)
            self._input_ended()
            self.core.finish(now_iso(), noticed_ns=time.monotonic_ns())
            self._take_notes()
            self._rows += self.core.take()
            while not self._try_commit():
                if self._given_up():
                    return self._leave(self._failing or "the database refused")
                time.sleep(max(0.01, self._next_try - time.monotonic()))
            if self._notes:  # said while the last batch was written ("... again"): best effort
                self._try_commit()
            if reader.finish():
                self._warn(
                    f"the journal {self.journal} ends with {reader.cut} bytes of a cut record"
                )
            reader.remove_before(self._position + (1 << 40))
            self.db.forget_journal(self.journal)
            self._own_ledger()
            follower.finish()  # a capture just recorded is searchable at once
            done = True
            return 0
        finally:
            follower.close()
            if self._checkpointer is not None:
                self._checkpointer.close()
            reader.close()
            if self.db is not None:
                self.db.close()
            if hold is not None:
                spill.release_journal(self.db_path, self.journal, hold, done=done)

    def _own_ledger(self) -> None:
        """What the relay could not even journal (a full disk) — losses, how a capture
        ended — is in its ledger, closed by now: written down at once, not left for the
        next recorder."""
        assert self.db is not None
        for ledger in ledger_files(self.db_path):
            if ledger.name.endswith(f".ledger.{self.journal}") and not spill.is_locked(ledger):
                import_ledger(self.db, ledger, self._warn)

    def _collect_when_idle(self) -> None:
        if not gc.isenabled() and time.monotonic() - self._collected > _COLLECT_EVERY_S:
            gc.collect()
            self._collected = time.monotonic()

    def _feed(self, batch: list[tuple[int, Record]]) -> None:
        for pos, rec in batch:
            self.core.feed(rec, pos)
        if batch:
            # the end of the last record read: a record boundary, where reading resumes
            assert self._reader is not None
            self._position = self._reader.position
        self._rows += self.core.take()
        self._try_commit()

    def _committed_position(self) -> int:
        """Where a recorder starting over must read from: the oldest record an unfinished
        line still needs, else the end of what was read."""
        oldest = self.core.oldest_needed()
        return min(oldest, self._position) if oldest is not None else self._position

    def _try_commit(self) -> bool:
        """Write the rows made so far with how far the journal was read; False when the
        database refused them (they stay, nothing is lost: the journal still holds them)."""
        if self._notes:
            self._take_notes()
            self._rows += self.core.take()
        if not self._rows:
            return True
        if self._failing and time.monotonic() < self._next_try:
            return False
        assert self.db is not None
        position = self._committed_position()
        try:
            self.db.write(self._rows, self.journal, position)
        except sqlite3.Error as e:
            self._failed(str(e))
            return False
        except (ValueError, TypeError, OverflowError) as e:  # a value the database refused
            return self._refused_value(e)
        rows, self._rows = self._rows, []
        self._written(rows, position)
        if self._follower is not None:
            self._follower.committed(len(rows))
        return True

    def _written(self, rows: list[Row], position: int) -> None:
        if self._failing and self._said_failing:
            self._warn(f"recording to {self.db_path} again")
        self._failing = None
        self._said_failing = False
        self._retry = 0
        self._observe(rows)
        if self._reader is not None:
            self._reader.remove_before(position)
            if self._checkpointer is not None:
                self._checkpointer.progress(self._reader.read_bytes)

    def _refused_value(self, e: BaseException) -> bool:
        self._warn(f"warning: storing a batch row by row ({type(e).__name__}: {e})")
        if not self._salvage():
            return False
        self._written([], self._committed_position())  # the rows were observed one by one
        return True

    def _observe(self, rows: list[Row]) -> None:
        if self._observer is None:
            return
        try:
            self._observer(rows)
        except Exception as e:  # telemetry must never stop recording
            self._observer = None
            self._warn(f"warning: live telemetry stopped ({type(e).__name__}: {e})")

    def _salvage(self) -> bool:
        """Write the rows one at a time; a frame whose derived fields cannot be bound is
        stored with its bytes only, flagged ``underivable``. Only a row that cannot be
        stored at all is left out, and said so. False when the database itself fails on
        the way (the rows not yet written stay, for the next try)."""
        assert self.db is not None
        rows = self._rows
        for i, row in enumerate(rows):
            try:
                self._store_alone(row)
            except sqlite3.Error as e:
                self._observe(rows[:i])
                self._rows = rows[i:]
                self._failed(str(e))
                return False
        self._observe(rows)
        self._rows = []
        try:
            self.db.write([], self.journal, self._committed_position())
        except sqlite3.Error as e:
            self._failed(str(e))
            return False
        return True

    def _store_alone(self, row: Row) -> None:
        assert self.db is not None
        try:
            self.db.write([row])
            return
        except (ValueError, TypeError, OverflowError):
            pass
        if isinstance(row, FrameRow):
            row.info = Info(Kind.INVALID, anomalies=["underivable"])
            row.anomalies = ["underivable"]
            row.request_seq = row.latency_ns = None
            with contextlib.suppress(ValueError, TypeError, OverflowError):
                self.db.write([row])
                return
        self._warn(f"warning: could not store a {type(row).__name__}; left out")

    def _failed(self, why: str) -> None:
        """The database refused a batch: retried later. Said once — at once, or for a
        lock (another writer of ours, usually for a moment) only once it lasts."""
        now = time.monotonic()
        if self._failing is None:
            self._failing_since = now
        quiet = _transient(why) and now - self._failing_since < _QUIET_LOCK_S
        if not self._said_failing and not quiet:
            self._said_failing = True
            self._warn(
                f"warning: cannot write recordings database {self.db_path} ({why}); traffic "
                "is still forwarded and kept beside it until it can be written"
            )
        self._failing = why
        self._next_try = time.monotonic() + _RETRY_S[min(self._retry, len(_RETRY_S) - 1)]
        self._retry += 1

    def _lookup(self, number: int) -> tuple[str, Resume] | None:
        return self.db.lookup(self.journal, number) if self.db is not None else None

    # -- the database and the end --------------------------------------------------------

    def _open_db(self) -> None:
        try:
            self.db = Database(
                self.db_path, recorder_pid=os.getpid(), recorder_start=self._identity
            )
        except (StoreError, sqlite3.Error) as e:
            self._failed(str(e))

    def _wait_for_db(self) -> bool:
        """Wait a while for the database to open; False once waiting is pointless (the
        relay is gone and the reason is not a lock)."""
        if self._relay_gone() and self._given_up():
            return False
        time.sleep(max(0.05, self._next_try - time.monotonic()))
        return True

    def _relay_gone(self) -> bool:
        gone = not self._reader.bell_open if self._reader is not None else _closed(self._bell)
        if gone:
            self._input_ended()
        return gone

    def _input_ended(self) -> None:
        if self._ended_at is None:
            self._ended_at = time.monotonic()

    def note(self, message: str) -> None:
        """Something said after the relay was gone: it is written into the events of
        this journal's captures with the next batch (any thread may call this)."""
        self._notes.append(message)

    def _take_notes(self) -> None:
        if self._notes:
            notes, self._notes = self._notes, []
            for message in notes:
                self.core.note(events.RecorderNote(message=message), time.monotonic_ns())

    def _given_up(self) -> bool:
        """After the relay is gone: whether waiting for the database any longer is
        pointless (it is not a lock that will go away, or patience ran out)."""
        if self._failing is None:
            return False
        if not _transient(self._failing):
            return True
        assert self._ended_at is not None
        return time.monotonic() - self._ended_at >= _PATIENCE_S

    def _leave(self, why: str) -> int:
        """The relay is gone and the database cannot be written: the journal stays, as a
        spill file, for the next recorder or ``import-spill``."""
        first = self._reader.seq if self._reader is not None else 0
        files = []
        for seq in range(first, first + 1_000_000):
            path = segment_path(self.db_path, self.journal, seq)
            if not path.exists():
                break
            files.append(str(path))
        if files:
            self._warn(
                f"warning: {self.db_path} could not be written ({why}); what was not recorded "
                f"is kept in {', '.join(files)} (bring it in with: acp-proxy import-spill "
                f"--db {self.db_path})"
            )
        else:
            self._warn(f"warning: {self.db_path} could not be written ({why}); nothing was kept")
        return 1


def _transient(why: str) -> bool:
    """A lock held by another writer goes away; a read-only or missing file does not."""
    return "locked" in why or "busy" in why


def _closed(fd: int) -> bool:
    """Whether the doorbell's writer is gone (read end at EOF with nothing pending)."""
    import select

    ready, _, _ = select.select([fd], [], [], 0)
    if not ready:
        return False
    try:
        return os.read(fd, 65536) == b""
    except OSError:
        return True

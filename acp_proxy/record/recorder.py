"""A recorder: records from a relay into the database, whatever happens (layer 2).

What belongs here: :class:`Recorder`, which runs the three parts of recording together —
the :class:`~acp_proxy.record.inbox.Inbox` (the pipe, never blocked), the pure
:class:`~acp_proxy.record.core.Core` (records to rows) and the
:class:`~acp_proxy.record.sqlite.Database` — and decides what happens when the database
does not take a batch: the batch is kept and retried (a lock, a full disk that frees up),
the inbox keeps the relay's bytes meanwhile, and whatever is still not written when the
input ends goes to a spill file. Also :func:`import_spills`, which brings spill files and
ledgers left by recorders that are gone into the database.

It runs in its own process (:mod:`acp_proxy.record.child`) or, as a fallback, in a thread.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from acp_proxy.errors import StoreError
from acp_proxy.protocol.jsonrpc import Info, Kind
from acp_proxy.record import spill
from acp_proxy.record.core import Core, Resume
from acp_proxy.record.inbox import Inbox
from acp_proxy.record.rows import FrameRow, Row
from acp_proxy.record.sqlite import Database, now_iso
from acp_proxy.record.wire import Record
from acp_proxy.store import liveness

__all__ = ["ImportResult", "Recorder", "import_spills"]

Warn = Callable[[str], None]
_SPARSE = 64  # fewer records than this in a batch: wait a moment for more
_COALESCE_S = 0.003
_HOLD_BYTES = 32 * 1024 * 1024  # rows kept for a database that is not taking them
_RETRY_S = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0)
# At the end of the input, how long a locked database is waited for before spilling.
_EXIT_PATIENCE_S = float(os.environ.get("ACP_PROXY_RECORDER_PATIENCE", "10"))


class Recorder:
    """Records what arrives on ``fd`` into ``db_path`` until the input ends."""

    def __init__(
        self,
        db_path: Path,
        fd: int,
        *,
        warn: Warn,
        memory_limit: int | None = None,
        on_input_end: Callable[[], None] | None = None,
    ):
        self.db_path = Path(db_path)
        self.id = uuid.uuid4().hex[:12]
        self._warn = warn
        kwargs = {} if memory_limit is None else {"memory_limit": memory_limit}
        self.inbox = Inbox(
            fd, self.db_path, recorder_id=self.id, warn=warn, on_end=on_input_end, **kwargs
        )
        self.core = Core(lookup=self._lookup)
        self.db: Database | None = None
        self._rows: list[Row] = []  # made by the core, not yet committed
        self._fed: list[Record] = []  # the records those rows came from
        self._fed_bytes = 0
        self._snapshot: list[tuple[Record, list[bytes]]] = []  # unfinished lines, last commit
        self._index = 0
        self._held: list[Record] = []  # records waiting for the database to tell their state
        self._failing: str | None = None  # why the last write failed
        self._given_up_at: float | None = None
        self._retry = 0
        self._next_try = 0.0
        self._identity = liveness.identity()

    # -- the loop ------------------------------------------------------------------------

    def run(self) -> int:
        """Record until the input ends; returns 0 when everything reached the database."""
        self.inbox.start()
        self._open_db()
        if self.db is not None:
            import_spills(self.db, warn=self._warn, skip=self.id)
        while True:
            if self._held:
                if not self._can_resume():
                    if self.inbox.ended and self._given_up():
                        break  # the input is over and the database will not come back
                    time.sleep(max(0.01, self._wait()))
                    continue
                records: list[Record] | None = self._held
                self._held = []
            elif self._failing and self._fed_bytes > _HOLD_BYTES:
                # the database is not taking rows: leave the rest in the inbox (it overflows
                # to disk) rather than growing rows in memory
                if self.inbox.ended and self._given_up():
                    break
                time.sleep(max(0.01, self._wait()))
                self._try_commit()
                continue
            else:
                records = self.inbox.get(timeout=self._wait() if self._rows else None)
            if records is None:
                break
            if records and len(records) < _SPARSE and not self._rows:
                time.sleep(_COALESCE_S)  # sparse traffic: batch what follows with it
            self._feed(records)
        if self._held:  # the input ended while they waited for the database
            return self._finish()
        self.core.finish(now_iso())
        self._rows += self.core.take()
        return self._finish()

    def _feed(self, records: list[Record]) -> None:
        for i, r in enumerate(records):
            if self.core.needs_state(r) and not self._can_resume():
                self._held = records[i:]
                break
            self.core.feed(r, self._index)
            self._index += 1
            self._fed.append(r)
            self._fed_bytes += len(r.payload)
        self._rows += self.core.take()
        self._try_commit()

    def _given_up(self) -> bool:
        """After the input ended: whether waiting for the database any longer is pointless."""
        if self._failing is None or not _transient(self._failing):
            return True
        if self._given_up_at is None:
            self._given_up_at = time.monotonic() + _EXIT_PATIENCE_S
        return time.monotonic() >= self._given_up_at

    def _wait(self) -> float:
        return max(0.0, self._next_try - time.monotonic()) if self._failing else 0.5

    def _can_resume(self) -> bool:
        """State can be read back only from a database that holds everything written."""
        if self.db is None:
            self._open_db()
        if self.db is None:
            return False
        self._try_commit()
        return not self._rows

    def _open_db(self) -> None:
        if self.db is not None or time.monotonic() < self._next_try:
            return
        try:
            self.db = Database(
                self.db_path, recorder_pid=os.getpid(), recorder_start=self._identity
            )
        except (StoreError, sqlite3.Error) as e:
            self._failed(str(e), opening=True)

    def _lookup(self, uid: str) -> Resume | None:
        return self.db.resume(uid) if self.db is not None else None

    def _try_commit(self) -> bool:
        if not self._rows:
            return True
        if self._failing and time.monotonic() < self._next_try:
            return False
        if self.db is None:
            self._open_db()
            if self.db is None:
                return False
        try:
            self.db.write(self._rows)
        except sqlite3.Error as e:
            self._failed(str(e))
            return False
        except (ValueError, TypeError, OverflowError) as e:  # a value the database refused
            self._warn(f"warning: storing a batch row by row ({type(e).__name__}: {e})")
            self._salvage()
        if self._failing:
            self._warn(f"recording to {self.db_path} again")
        self._failing = None
        self._retry = 0
        self._rows = []
        self._fed = []
        self._fed_bytes = 0
        self._snapshot = self.core.unfinished()
        return True

    def _salvage(self) -> None:
        """Write the rows one at a time; a frame whose derived fields cannot be bound is
        stored with its bytes only, flagged ``underivable``. Only a row that cannot be
        stored at all is left out, and said so."""
        assert self.db is not None
        for row in self._rows:
            try:
                self.db.write([row])
                continue
            except (ValueError, TypeError, OverflowError):
                pass
            if isinstance(row, FrameRow):
                row.info = Info(Kind.INVALID, anomalies=["underivable"])
                row.anomalies = ["underivable"]
                row.request_seq = row.latency_ns = None
                with contextlib.suppress(ValueError, TypeError, OverflowError):
                    self.db.write([row])
                    continue
            self._warn(f"warning: could not store a {type(row).__name__}; left out")
        self._rows = []
        self._fed = []
        self._fed_bytes = 0
        self._snapshot = self.core.unfinished()

    def _failed(self, why: str, *, opening: bool = False) -> None:
        if self._failing is None:
            if opening and not self.inbox.can_spill():
                self._warn(
                    f"warning: cannot record into {self.db_path} ({why}) nor write beside it; "
                    "traffic is still forwarded but NOT recorded"
                )
            else:
                self._warn(
                    f"warning: cannot write recordings database {self.db_path} ({why}); "
                    "traffic is still forwarded and kept until it can be written"
                )
        self._failing = why
        self._next_try = time.monotonic() + _RETRY_S[min(self._retry, len(_RETRY_S) - 1)]
        self._retry += 1

    def _finish(self) -> int:
        while self._rows and not self._try_commit() and not self._given_up():
            time.sleep(max(0.01, self._wait()))
        ok = not self._rows and not self._held
        if not ok:
            head = [r._replace(payload=b"".join(parts)) for r, parts in self._snapshot]
            files, frames, size = self.inbox.drain_to_spill([*head, *self._fed, *self._held])
            self.inbox.lost_frames += frames
            self.inbox.lost_bytes += size
            if files:
                self._warn(
                    f"warning: {self.db_path} could not be written ({self._failing}); what "
                    f"was not recorded is in {', '.join(str(f) for f in files)} (bring it in "
                    f"with: acp-proxy import-spill --db {self.db_path})"
                )
        lost, size = self.inbox.lost_frames, self.inbox.lost_bytes
        if lost or size:
            if ok:
                where = "; the loss is written down as gaps"
            elif self.inbox.can_spill():
                where = "; the loss is written down when the database can be written"
            else:
                where = ""
            self._warn(
                f"warning: {lost} frames ({size} bytes) were forwarded but could not be "
                f"recorded{where}"
            )
        self.inbox.finished(all_written=ok)
        if self.db is not None:
            self.db.close()
        return 0 if ok else 1


def _transient(why: str) -> bool:
    """A lock held by another writer goes away; a read-only or missing file does not."""
    return "locked" in why or "busy" in why


# -- bringing in what recorders left behind ------------------------------------------------


@dataclass(slots=True)
class ImportResult:
    path: Path
    frames: int = 0
    cut: int = 0
    skipped: str | None = None  # why the file was left as it is


def import_spills(
    db: Database,
    files: list[Path] | None = None,
    *,
    warn: Warn,
    skip: str | None = None,
) -> list[ImportResult]:
    """Bring spill files (default: every one next to the database that no live recorder
    holds) and ledgers of recorders that are gone into ``db``."""
    results = []
    for path in files if files is not None else spill.spill_files(db.path):
        if skip and f".spill.{skip}." in path.name:
            continue
        results.append(_import_one(db, path, warn))
    if files is None:
        for ledger in spill.ledger_files(db.path):
            if (skip and ledger.name.endswith(skip)) or spill.is_locked(ledger):
                continue
            try:
                n = db.note_losses(*spill.read_ledger(ledger), "could not be kept anywhere")
            except sqlite3.Error:
                continue
            if n:
                warn(f"wrote down {n} losses from {ledger}")
            with contextlib.suppress(OSError):
                ledger.unlink()
    return results


def _import_one(db: Database, path: Path, warn: Warn) -> ImportResult:
    result = ImportResult(path)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        result.skipped = e.strerror
        return result
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            result.skipped = "still being written by a running recorder"
            return result
        core = Core(lookup=db.resume)
        reader = spill.Reader(path)
        try:
            index = 0
            for records in reader:
                for r in records:
                    core.feed(r, index)
                    index += 1
                rows = core.take()
                result.frames += sum(1 for row in rows if isinstance(row, FrameRow))
                db.write(rows)
            result.cut = reader.cut()
            ended = [
                uid
                for uid in core.captures().values()
                if (state := db.resume(uid)) is not None and not state.ended
            ]
            if ended and not _relays_alive(db, ended):
                core.finish(now_iso())
                db.write(core.take())
        finally:
            reader.close()
        if result.cut:
            warn(
                f"{path}: the last {result.cut} bytes are an incomplete record (the file was cut "
                "short, a full disk most likely); every complete record was imported"
            )
        os.unlink(path)
    except sqlite3.Error as e:
        result.skipped = f"database: {e}"
    finally:
        os.close(fd)
    return result


def _relays_alive(db: Database, uids: list[str]) -> bool:
    for uid in uids:
        row = db.conn.execute(
            "SELECT proxy_pid, proxy_start FROM captures WHERE uid = ?", [uid]
        ).fetchone()
        if row is not None and liveness.alive(row[0], row[1]):
            return True
    return False

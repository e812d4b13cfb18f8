"""Bringing in what relays and recorders left behind: journals nobody holds, and ledgers.

What belongs here: :func:`import_spills`, run by every recorder when it starts and by
``acp-proxy import-spill``. A journal whose relay and recorder are gone (a SIGKILL, a database
that could not be written) is read through the same :class:`~acp_proxy.record.core.machine.Core`
as a live one, from where the database says it was read to, so an import is exact and
running it twice adds nothing. A ledger whose relay is gone becomes ``gap`` rows, and the
exit of a capture whose ``CLOSE`` record was lost.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp_proxy.record import spill
from acp_proxy.record.core.machine import Core
from acp_proxy.record.core.rows import CaptureFields, FrameRow, GapRow, OpenRow, Row
from acp_proxy.record.follow import JournalReader
from acp_proxy.record.ledger import LedgerContent, ledger_files, read_ledger
from acp_proxy.record.spill import segment_path
from acp_proxy.record.sqlite import Database
from acp_proxy.store import liveness
from acp_proxy.store.db import iso_after, now_iso

__all__ = ["ImportResult", "import_ledger", "import_spills"]

Warn = Callable[[str], None]


@dataclass(slots=True)
class ImportResult:
    path: Path
    frames: int = 0
    cut: int = 0
    skipped: str | None = None  # why the journal was left as it is


def import_spills(
    db: Database,
    journals: list[str] | None = None,
    *,
    warn: Warn,
    skip: str | None = None,
) -> list[ImportResult]:
    """Bring journals nobody holds any more (default: every one next to the database)
    and ledgers of relays that are gone into ``db``."""
    results = []
    names = journals if journals is not None else spill.journal_names(db.path)
    for name in names:
        if name != skip:
            results.append(_import_journal(db, name, warn))
    if journals is None:
        for ledger in ledger_files(db.path):
            if (skip and ledger.name.endswith(skip)) or spill.is_locked(ledger):
                continue
            import_ledger(db, ledger, warn)
    return results


def import_ledger(db: Database, ledger: Path, warn: Warn) -> None:
    """Write down what ``ledger`` holds (gaps, how captures ended), then remove it."""
    rows, gaps = ledger_rows(db, read_ledger(ledger), "could not be kept anywhere")
    try:
        db.write(rows)
    except sqlite3.Error:
        return
    if gaps:
        warn(f"wrote down {gaps} losses from {ledger}")
    with contextlib.suppress(OSError):
        ledger.unlink()


_STREAMS = {1: "c2a", 2: "a2c", 3: "stderr"}


def ledger_rows(db: Database, ledger: LedgerContent, reason: str) -> tuple[list[Row], int]:
    """The rows that write a ledger down: ``gap`` events for the losses not yet in the
    database (a capture it never got is opened from what the ledger knows of it, ended as
    ``not_recorded``), and the end of captures whose ``CLOSE`` record was lost; with the
    number of gaps."""
    rows: list[Row] = []
    opened: set[str] = set()

    def known(uid: str) -> int | None:
        cid = db.capture_id(uid)
        if cid is None and uid not in opened:
            opened.add(uid)
            rows.append(OpenRow(uid, {**ledger.captures.get(uid, {}), "uid": uid}))
            rows.append(CaptureFields(uid, {"end_reason": "not_recorded"}))
        return cid

    gaps = 0
    for entry in ledger.losses:
        uid, stream, ranges = entry.get("uid"), entry.get("stream"), entry.get("ranges")
        if not isinstance(uid, str) or not isinstance(ranges, list):
            continue
        cid = known(uid)
        name = _STREAMS.get(stream if isinstance(stream, int) else 0, "?")
        for lost in ranges:
            if isinstance(lost, list) and len(lost) == 3 and not _gap_known(db, cid, name, lost):
                rows.append(GapRow(uid, name, lost[0], lost[1], lost[2], reason, None))
                gaps += 1
    for uid, fields in ledger.closes.items():
        cid = known(uid)
        row = db.conn.execute(
            "SELECT exit_code, end_reason FROM captures WHERE id = ?", [cid]
        ).fetchone()
        if row is not None and row[0] is not None:
            continue  # its relay's own account of the end reached the database
        ended: dict[str, Any] = {
            k: fields[k] for k in ("exit_code", "exit_signal", "ended_at") if k in fields
        }
        if row is not None and row[1] in (None, "proxy_gone"):
            ended["end_reason"] = "closed"  # it was closed by its relay, not killed
        rows.append(CaptureFields(uid, ended))
    return rows, gaps


def _gap_known(db: Database, cid: int | None, stream: str, lost: list[Any]) -> bool:
    if cid is None:
        return False
    return (
        db.conn.execute(
            "SELECT 1 FROM events WHERE capture_id = ? AND kind = 'gap' "
            "AND json_extract(detail, '$.stream') = ? "
            "AND json_extract(detail, '$.start') <= ? AND json_extract(detail, '$.end') >= ?",
            [cid, stream, lost[0], lost[1]],
        ).fetchone()
        is not None
    )


def _import_journal(db: Database, journal: str, warn: Warn) -> ImportResult:
    first = spill.first_segment(db.path, journal)
    result = ImportResult(segment_path(db.path, journal, first if first is not None else 0))
    if first is None:
        result.skipped = "no such journal"
        return result
    lock = spill.take_journal(db.path, journal)
    if lock is None:
        result.skipped = "still in use by a running relay or recorder"
        return result
    done = False
    try:
        start = db.journal_position(journal)
        start = max(start or 0, first << 40)
        core = Core(lookup=lambda n: db.lookup(journal, n))
        reader = JournalReader(db.path, journal, None, start)
        position = start
        try:
            while (batch := reader.read()) is not None:
                for pos, rec in batch:
                    core.feed(rec, pos)
                position = reader.position
                rows = core.take()
                result.frames += sum(1 for r in rows if isinstance(r, FrameRow))
                oldest = core.oldest_needed()
                db.write(rows, journal, min(oldest, position) if oldest is not None else position)
            result.cut = reader.finish()
            gone = [uid for uid in core.captures().values() if not _relay_alive(db, uid)]
            if gone:
                core.finish(now_iso())  # they end at their last record (no noticed_ns)
                db.write(_dated_by_their_end(db, core.take(), gone), journal, position)
            reader.remove_before(position + (1 << 40))
            db.forget_journal(journal)
            done = True
        finally:
            reader.close()
        if result.cut:
            warn(
                f"{result.path}: the last {result.cut} bytes are an incomplete record (the "
                "file was cut short, a full disk most likely); every complete record was "
                "imported"
            )
    except sqlite3.Error as e:
        result.skipped = f"database: {e}"
    finally:
        spill.release_journal(db.path, journal, lock, done=done)
    return result


def _relay_alive(db: Database, uid: str) -> bool:
    row = db.conn.execute(
        "SELECT proxy_pid, proxy_start FROM captures WHERE uid = ?", [uid]
    ).fetchone()
    return row is not None and liveness.alive(row[0], row[1])


def _dated_by_their_end(db: Database, rows: list[Row], gone: list[str]) -> list[Row]:
    """``rows``, where a capture of ``gone`` is closed (its relay long gone, it ended at
    its last record) with ``ended_at`` that moment on the wall clock — its start and what
    it lasted —, not the moment the journal was brought in."""
    for r in rows:
        if isinstance(r, CaptureFields) and r.uid in gone and "ended_ns" in r.fields:
            row = db.conn.execute("SELECT started_at FROM captures WHERE uid = ?", [r.uid])
            found = row.fetchone()
            ended = iso_after(found[0] if found else None, r.fields["ended_ns"])
            if ended is not None:
                r.fields["ended_at"] = ended
    return rows

"""The SQLite end of recording: transactions, spill, import, and loss written down as gaps."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from conftest import db_rows

from acp_proxy.record.sink import Batch, SqliteSink, spill_files
from acp_proxy.store.reader import Store


def _meta(uid: str) -> dict[str, object]:
    return {
        "uid": uid,
        "transport": "stdio",
        "agent_command": ["agent"],
        "cwd": "/",
        "upstream_url": None,
        "listen_url": None,
        "pid": 1,
        "proxy_pid": 2,
        "started_at": "2026-12-02T00:00:00.000Z",
        "started_ns": 0,
        "label": "t",
    }


def _frame(seq: int, raw: bytes) -> tuple[object, ...]:
    return (
        seq,
        "a2c",
        seq * 10,
        raw,
        1,
        None,
        len(raw),
        "notification",
        "m",
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
    )


def _batch(uid: str, seqs: range, *, open_: bool = False) -> Batch:
    return Batch(
        opens=[_meta(uid)] if open_ else [],
        frames={uid: [_frame(i, b'{"n":%d}' % i) for i in seqs]},
        updates={uid: {"message_count": seqs.stop}},
    )


def test_loss_is_recorded_as_a_gap_when_the_database_comes_back(tmp_path: Path) -> None:
    blocker = tmp_path / "db-dir"
    blocker.write_text("not a directory yet")
    warnings: list[str] = []
    sink = SqliteSink(blocker / "r.sqlite", warn=warnings.append)
    sink.write(_batch("u1", range(5), open_=True))
    assert sink.lost == 5 and "NOT recorded" in warnings[0]
    blocker.unlink()
    blocker.mkdir()
    sink.close()
    db = blocker / "r.sqlite"
    assert db_rows(db, "SELECT kind, detail FROM events") == [
        ("gap", '{"frames":5,"first_seq":0,"last_seq":4}')
    ]
    assert db_rows(db, "SELECT uid, lost_count, label FROM captures") == [("u1", 5, "t")]


def test_spill_then_import_on_next_open(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    first = SqliteSink(db)
    first.write(_batch("u1", range(3), open_=True))
    lock = sqlite3.connect(db, isolation_level=None, timeout=0)
    lock.execute("PRAGMA busy_timeout = 0")
    lock.execute("BEGIN EXCLUSIVE")
    assert first._conn is not None
    first._conn.execute("PRAGMA busy_timeout = 50")
    first.write(_batch("u1", range(3, 6)))  # locked longer than the busy timeout: spills
    assert len(spill_files(db)) == 1
    spilled = spill_files(db)[0]
    assert spilled.stat().st_mode & 0o777 == 0o600
    lock.execute("ROLLBACK")
    lock.close()
    # a second writer opening the database while the first still holds its spill: left alone
    SqliteSink(db).close()
    assert spill_files(db) == [spilled]
    first.close()  # the first brings its own spill in
    assert spill_files(db) == []
    s = Store(db)
    frames = list(s.frames(1))
    assert [f.seq for f in frames] == list(range(6))
    assert "spilled" in frames[4].anomalies and "spilled" not in frames[1].anomalies
    s.close()


def test_every_row_of_a_batch_lands_in_one_transaction(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    sink = SqliteSink(db)
    sink.write(_batch("u1", range(1000), open_=True))
    sink.write(_batch("u2", range(10), open_=True))
    sink.close()
    assert db_rows(db, "SELECT capture_id, COUNT(*) FROM messages GROUP BY capture_id") == [
        (1, 1000),
        (2, 10),
    ]
    assert db_rows(db, "SELECT message_count FROM captures ORDER BY id") == [(1000,), (10,)]

"""Checkpoints beside the recorder: the WAL is copied into the database as commits add to
it, on a thread of its own, without the writer's connection doing it."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from acp_proxy.record.checkpoint import Checkpointer
from acp_proxy.store.db import PAGE_SIZE, connect


def test_the_wal_is_copied_once_enough_was_written(db: Path) -> None:
    writer = connect(db)
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("CREATE TABLE t (b BLOB)")
    checkpointer = Checkpointer(db, every=1 << 20)
    blob = b"x" * 4096
    for _ in range(100):  # 400 KiB: not enough yet
        writer.execute("INSERT INTO t VALUES (?)", [blob])
    checkpointer.progress(100 * 4096)
    time.sleep(0.2)
    assert checkpointer.done == 0
    # everything is in the WAL still: the database file holds the schema alone
    assert db.stat().st_size < 300 * 4096
    for _ in range(200):
        writer.execute("INSERT INTO t VALUES (?)", [blob])
    checkpointer.progress(300 * 4096)  # past 1 MiB in all: one is asked for
    deadline = time.monotonic() + 30
    while checkpointer.done == 0:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    checkpointer.close()
    # the writer never checkpoints (its automatic checkpoints are off): the thread copied
    # the 300 rows into the database file
    assert writer.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)
    assert db.stat().st_size >= 300 * 4096
    writer.close()


def test_a_new_database_takes_the_large_page_size_and_an_old_one_keeps_its_own(
    tmp_path: Path,
) -> None:
    new = connect(tmp_path / "new.sqlite")
    new.execute("CREATE TABLE t (x)")
    assert new.execute("PRAGMA page_size").fetchone() == (PAGE_SIZE,) == (65536,)
    new.close()
    old = tmp_path / "old.sqlite"
    plain = sqlite3.connect(old)
    plain.execute("CREATE TABLE t (x)")
    plain.close()
    (tmp_path / "old.sqlite").chmod(0o600)
    again = connect(old)
    assert again.execute("PRAGMA page_size").fetchone() == (4096,)
    again.close()

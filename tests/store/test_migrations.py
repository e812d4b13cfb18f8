"""Schema migrations on a database written by an earlier release (tests/data/store/), not on
one this code made: what users already have on disk must come through whole."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

from support.paths import DATA
from support.proc import PROXY, run_proxy

from acp_proxy.store.db import connect, migrate, schema_migrations
from acp_proxy.store.index import catch_up, indexed_upto
from acp_proxy.store.search import search

# the demo and a hostile capture as the release before migration 5 recorded them (its
# journal mode set back to DELETE, so that reading it leaves no -wal or -shm beside it)
SCHEMA_4 = DATA / "store" / "schema-4.sqlite"

_VIEWS = ("requests", "sessions", "tool_call_frames", "frames")


def _copy(tmp_path: Path) -> Path:
    db = tmp_path / "old.sqlite"
    shutil.copyfile(SCHEMA_4, db)
    db.chmod(0o600)
    return db


def _contents(db: Path) -> dict[str, Any]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    conn.text_factory = bytes  # the frames view casts raw, invalid UTF-8 included, to text
    try:
        out: dict[str, Any] = {
            "messages": [dict(r) for r in conn.execute("SELECT * FROM messages ORDER BY id")]
        }
        for view in _VIEWS:
            out[view] = [tuple(r) for r in conn.execute(f"SELECT * FROM {view}")]
        out["captures"] = [dict(r) for r in conn.execute("SELECT * FROM captures ORDER BY id")]
        return out
    finally:
        conn.close()


def test_the_fixture_is_a_version_4_database() -> None:
    conn = sqlite3.connect(f"file:{SCHEMA_4}?mode=ro&immutable=1", uri=True)
    assert conn.execute("SELECT MAX(version) FROM schema_version").fetchone() == (4,)
    assert conn.execute("SELECT COUNT(*) FROM messages").fetchone() == (58,)
    columns = [r[1] for r in conn.execute("PRAGMA table_info(messages)")]
    assert columns.index("raw") == 5  # before: raw in the middle of the row
    conn.close()


def test_migration_5_moves_raw_last_and_keeps_every_row_and_view(tmp_path: Path) -> None:
    db = _copy(tmp_path)
    before = _contents(db)
    conn = connect(db, create=False)
    indexed_before = conn.execute(
        "SELECT m.capture_id, m.seq FROM frames_fts f JOIN messages m ON m.id = f.rowid "
        "WHERE frames_fts MATCH 'initialize' ORDER BY f.rowid DESC"
    ).fetchall()
    assert migrate(conn) == schema_migrations()[-1][0] == 8
    columns = [r[1] for r in conn.execute("PRAGMA table_info(messages)")]
    assert columns[-1] == "raw"
    # ids kept: the index made again in its own file finds the same frames
    assert indexed_upto(conn, "frames") == 0
    catch_up(conn)
    assert [(h.capture_id, h.seq) for h in search(conn, "initialize")] == indexed_before
    assert indexed_before  # the fixture's index was filled when it was written
    conn.close()
    after = _contents(db)
    assert after == before
    hostile = [m["raw"] for m in after["messages"] if m["capture_id"] == 2]
    assert b"noise \xff\xfe" in hostile and b"last line without newline" in hostile


def test_a_migrated_database_records_and_reads_as_a_new_one(tmp_path: Path) -> None:
    db = _copy(tmp_path)
    r = run_proxy(db, ["cat"], b'{"jsonrpc":"2.0","method":"_after","params":{}}\n')
    assert r.returncode == 0, r.stderr
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT MAX(version) FROM schema_version").fetchone() == (8,)
    assert conn.execute(
        "SELECT id, capture_id, seq, method FROM messages WHERE capture_id = 3 ORDER BY seq"
    ).fetchall() == [(59, 3, 0, "_after"), (60, 3, 1, "_after")]
    conn.close()
    shown = subprocess.run(
        [*PROXY, "show", "1", "--db", str(db), "--no-pager", "--color", "never"],
        capture_output=True,
        check=True,
    ).stdout
    assert b"initialize" in shown and b"session/prompt" in shown

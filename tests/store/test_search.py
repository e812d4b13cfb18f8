"""Full-text search: migration 4 on an existing database, the index kept current by its
readers, queries that cannot inject FTS5 syntax, and ``acp-proxy search``."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.proc import PROXY, db_rows, peer, run_proxy

from acp_proxy.errors import UsageError
from acp_proxy.store.db import connect, migrate, schema_migrations
from acp_proxy.store.search import (
    catch_up,
    fts_query,
    index_text,
    indexed_upto,
    search,
)


def _record(db: Path, tmp_path: Path, lines: list[bytes]) -> None:
    source = tmp_path / "out.bin"
    source.write_bytes(b"".join(line + b"\n" for line in lines))
    r = run_proxy(db, peer("echo_agent.py", str(tmp_path / "copy.bin"), str(source)))
    assert r.returncode == 0, r.stderr


def _as_version_3(db: Path) -> None:
    """What a database written before migration 4 looks like."""
    conn = sqlite3.connect(db)
    conn.executescript(
        "DROP TABLE frames_fts; DROP TABLE search_index; "
        "DELETE FROM schema_version WHERE version >= 4;"
    )
    conn.close()


def test_migration_4_indexes_an_existing_database(db: Path, tmp_path: Path) -> None:
    _record(
        db,
        tmp_path,
        [
            b'{"jsonrpc":"2.0","method":"session/update","params":{"text":"alpha\\nbravo"}}',
            b"not json at all: charlie \xff\xfe delta",
        ],
    )
    _as_version_3(db)
    assert db_rows(db, "SELECT MAX(version) FROM schema_version") == [(3,)]
    conn = connect(db, create=False)
    assert migrate(conn) == schema_migrations()[-1][0]
    assert indexed_upto(conn) == 0
    assert catch_up(conn) == 2
    assert catch_up(conn) == 0
    # a \n escape does not glue two words together; invalid UTF-8 does not stop the rest
    assert [h.seq for h in search(conn, "bravo")] == [0]
    assert [h.seq for h in search(conn, "delta")] == [1]
    assert [h.seq for h in search(conn, "session/update")] == [0]
    assert search(conn, "echo") == []
    hit = search(conn, "charlie")[0]
    assert hit.match.lower() == "charlie" and hit.before.endswith("at all: ")


def test_new_frames_are_indexed_incrementally(db: Path, tmp_path: Path) -> None:
    _record(db, tmp_path, [b'{"jsonrpc":"2.0","method":"one/first"}'])
    conn = connect(db, create=False)
    migrate(conn)
    assert catch_up(conn) == 1
    _record(db, tmp_path, [b'{"jsonrpc":"2.0","method":"two/second"}'])
    assert search(conn, "second") == []  # not indexed yet
    assert catch_up(conn) == 1
    hits = search(conn, "second")
    assert [(h.capture_id, h.seq) for h in hits] == [(2, 0)]
    assert search(conn, "first", capture_id=2) == []
    assert [h.capture_id for h in search(conn, "first", capture_id=1)] == [1]


def test_readers_catching_up_at_once_index_each_frame_once(db: Path, tmp_path: Path) -> None:
    _record(db, tmp_path, [b'{"jsonrpc":"2.0","method":"m","params":{"w":"zulu"}}'] * 300)
    conns = [connect(db, create=False) for _ in range(3)]
    migrate(conns[0])
    done: list[int] = []
    threads = [
        threading.Thread(target=lambda c=c: done.append(catch_up(c, batch=7))) for c in conns
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(done) == 300
    hits = search(conns[0], "zulu", limit=1000)
    assert len(hits) == 300 and len({h.rowid for h in hits}) == 300


def test_query_syntax_is_ours_not_fts5s() -> None:
    assert fts_query("session/prompt") == '"session/prompt"'
    assert fts_query('exit "code 3" perm*') == '"exit" "code 3" "perm"*'
    assert fts_query("NOT OR AND NEAR(x") == '"NOT" "OR" "AND" "NEAR(x"'
    with pytest.raises(UsageError):
        fts_query(' "" *** ')


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=st.text(max_size=40))
def test_any_query_answers_or_says_why(tmp_path: Path, query: str) -> None:
    conn = sqlite3.connect(":memory:")
    for _, sql in schema_migrations():
        conn.executescript(sql)
    conn.execute(
        "INSERT INTO messages (id, capture_id, seq, direction, t_ns, raw, terminated, size, "
        "kind) VALUES (1, 1, 0, 'c2a', 0, x'7b7d', 1, 2, 'invalid')"
    )
    conn.execute("INSERT INTO frames_fts (rowid, text) VALUES (1, ?)", [query])
    conn.execute("CREATE VIRTUAL TABLE temp.words USING fts5vocab(main, frames_fts, 'row')")
    words = conn.execute("SELECT COUNT(*) FROM temp.words").fetchone()[0]
    try:
        hits = search(conn, query)
    except UsageError as e:  # nothing to look for: said so, never an FTS5 syntax error
        assert "nothing to search" in str(e) and words == 0
        return
    # the query's own words find the frame they are in
    assert [h.rowid for h in hits] == ([1] if words else [])


@given(raw=st.binary(max_size=300) | st.text(max_size=200).map(lambda s: json.dumps(s).encode()))
def test_any_frame_is_indexable(raw: bytes) -> None:
    text = index_text(raw)
    assert isinstance(text, str)
    text.encode("utf-8", errors="strict")  # lone surrogates never reach the index


def test_search_command(db: Path, tmp_path: Path) -> None:
    _record(
        db,
        tmp_path,
        [
            b'{"jsonrpc":"2.0","method":"session/update","params":{"t":"permission denied here"}}',
            b'{"jsonrpc":"2.0","method":"other","params":{"t":"\\u001b]0;evil\\u0007 denied"}}',
        ],
    )
    _as_version_3(db)
    r = subprocess.run(
        [*PROXY, "search", "permission denied", "--db", str(db)], capture_output=True
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.count(b"\n") == 1 and b"capture 1 #0" in r.stdout
    assert b"[permission]" in r.stdout
    r = subprocess.run([*PROXY, "search", "denied", "--db", str(db), "--json"], capture_output=True)
    hits = json.loads(r.stdout)
    assert [h["seq"] for h in hits] == [1, 0]
    assert b"\x1b" not in r.stdout and b"\x07" not in r.stdout
    r = subprocess.run([*PROXY, "search", "denied", "--db", str(db)], capture_output=True)
    assert b"\x1b" not in r.stdout and b"\\x1b" in r.stdout  # shown as an escape, not acted on
    r = subprocess.run([*PROXY, "search", "nowhere", "--db", str(db)], capture_output=True)
    assert r.returncode == 0 and r.stdout == b"" and b"no frame matches" in r.stderr
    r = subprocess.run([*PROXY, "search", "***", "--db", str(db)], capture_output=True)
    assert r.returncode == 2 and r.stderr.count(b"\n") == 1 and b"Traceback" not in r.stderr
    r = subprocess.run(
        [*PROXY, "search", "denied", "--db", str(db), "--capture", "9"], capture_output=True
    )
    assert r.returncode == 2 and b"no capture" in r.stderr

"""Full-text search: migration 4 on an existing database, the index kept current by its
readers, queries that cannot inject FTS5 syntax, and ``acp-proxy search``."""

from __future__ import annotations

import json
import sqlite3
import stat
import subprocess
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.proc import PROXY, db_rows, peer, run_proxy

from acp_proxy.errors import UsageError
from acp_proxy.store.db import connect, migrate, schema_migrations
from acp_proxy.store.index import catch_up, index_tables, index_text, indexed_upto, search_path
from acp_proxy.store.search import fts_query, search


def _record(db: Path, tmp_path: Path, lines: list[bytes]) -> None:
    source = tmp_path / "out.bin"
    source.write_bytes(b"".join(line + b"\n" for line in lines))
    r = run_proxy(db, peer("echo_agent.py", str(tmp_path / "copy.bin"), str(source)))
    assert r.returncode == 0, r.stderr


def _unindexed(db: Path) -> None:
    """The database as if the recorder had not indexed it: its index file gone."""
    for suffix in ("", "-wal", "-shm"):
        search_path(db).with_name(search_path(db).name + suffix).unlink(missing_ok=True)


def _as_version_6(db: Path) -> None:
    """What a database written before migration 7 looks like: the index inside it, filled,
    and no index file beside it."""
    _unindexed(db)
    conn = sqlite3.connect(db)
    for number, sql in schema_migrations():
        if number in (4, 6):
            conn.executescript(sql.replace("ALTER TABLE", "-- "))
    conn.execute("INSERT INTO frames_fts (rowid, text) SELECT id, 'stale' FROM messages")
    conn.execute("UPDATE search_index SET upto = (SELECT MAX(id) FROM messages)")
    conn.execute("DELETE FROM schema_version WHERE version >= 7")
    conn.commit()
    conn.close()


def _rows(db: Path) -> int:
    """Everything the index covers: frames, stderr writes and events."""
    ((n,),) = db_rows(
        db,
        "SELECT (SELECT COUNT(*) FROM messages) + (SELECT COUNT(*) FROM stderr) "
        "+ (SELECT COUNT(*) FROM events)",
    )
    return int(n)  # type: ignore[call-overload]


def test_migration_7_drops_the_index_inside_and_search_indexes_again(
    db: Path, tmp_path: Path
) -> None:
    _record(
        db,
        tmp_path,
        [
            b'{"jsonrpc":"2.0","method":"session/update","params":{"text":"alpha\\nbravo"}}',
            b"not json at all: charlie \xff\xfe delta",
        ],
    )
    _as_version_6(db)
    assert db_rows(db, "SELECT MAX(version) FROM schema_version") == [(6,)]
    conn = connect(db, create=False)
    assert migrate(conn) == schema_migrations()[-1][0]
    tables = {r[0] for r in conn.execute("SELECT name FROM main.sqlite_master")}
    assert not tables & {"frames_fts", "notes_fts", "search_index"}
    assert indexed_upto(conn) == 0 and not search_path(db).exists()
    assert catch_up(conn) == _rows(db)  # the two frames, and the capture's events
    assert catch_up(conn) == 0
    assert search(conn, "stale") == []  # nothing of the old index is left
    assert stat.S_IMODE(search_path(db).stat().st_mode) == 0o600
    # a \n escape does not glue two words together; invalid UTF-8 does not stop the rest
    assert [h.seq for h in search(conn, "bravo")] == [0]
    assert [h.seq for h in search(conn, "delta")] == [1]
    assert [h.seq for h in search(conn, "session/update")] == [0]
    assert search(conn, "echo") == [h for h in search(conn, "echo") if h.source == "event"]
    hit = search(conn, "charlie")[0]
    assert hit.match.lower() == "charlie" and hit.before.endswith("at all: ")


def test_an_index_file_of_another_format_is_made_again(db: Path, tmp_path: Path) -> None:
    # its rows went in with other text, and a contentless index takes a row out only with
    # the text it went in with: such a file is set aside, never written to
    _record(db, tmp_path, [b'{"jsonrpc":"2.0","method":"x/y","params":{"w":"kilo"}}'])
    index = sqlite3.connect(search_path(db))
    index.execute("INSERT INTO frames_fts (rowid, text) VALUES (1, 'stale')")
    index.execute("PRAGMA user_version = 0")  # as a file made by another version
    index.commit()
    index.close()
    conn = connect(db, create=False)
    assert search(conn, "stale") == []  # the old file is out of the way at once
    assert catch_up(conn) == _rows(db)  # everything indexed again, into a new file
    assert [h.seq for h in search(conn, "kilo")] == [0] and search(conn, "stale") == []
    assert stat.S_IMODE(search_path(db).stat().st_mode) == 0o600


def test_an_index_file_left_by_another_database_is_made_again(db: Path, tmp_path: Path) -> None:
    # the database was deleted and made again (or another copied over it) beside the index
    # of the old one: that index names a database this is not, and its rows other frames
    _record(db, tmp_path, [b'{"jsonrpc":"2.0","method":"x/y","params":{"w":"oldword"}}'] * 3)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    assert search_path(db).exists()
    _record(db, tmp_path, [b'{"jsonrpc":"2.0","method":"x/y","params":{"w":"newword"}}'])
    conn = connect(db, create=False)
    assert search(conn, "oldword") == []
    assert [(h.capture_id, h.seq) for h in search(conn, "newword")] == [(1, 0)]
    assert stat.S_IMODE(search_path(db).stat().st_mode) == 0o600


def test_new_frames_are_indexed_incrementally(db: Path, tmp_path: Path) -> None:
    _record(db, tmp_path, [b'{"jsonrpc":"2.0","method":"one/first"}'])
    _unindexed(db)
    conn = connect(db, create=False)
    migrate(conn)
    first = _rows(db)
    assert catch_up(conn) == first
    _record(db, tmp_path, [b'{"jsonrpc":"2.0","method":"two/second"}'])
    assert catch_up(conn) == 0  # the recorder indexed its capture as it stored it
    hits = search(conn, "second")
    assert [(h.capture_id, h.seq) for h in hits] == [(2, 0)]
    assert search(conn, "first", capture_id=2) == []
    assert [h.capture_id for h in search(conn, "first", capture_id=1)] == [1]


def test_readers_catching_up_at_once_index_each_frame_once(db: Path, tmp_path: Path) -> None:
    _record(db, tmp_path, [b'{"jsonrpc":"2.0","method":"m","params":{"w":"zulu"}}'] * 300)
    _unindexed(db)
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
    assert sum(done) == _rows(db)  # each frame, stderr write and event once
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
    conn.execute("ATTACH DATABASE ':memory:' AS search")
    for sql in index_tables():
        conn.execute(sql)
    conn.execute(
        "INSERT INTO messages (id, capture_id, seq, direction, t_ns, raw, terminated, size, "
        "kind) VALUES (1, 1, 0, 'c2a', 0, x'7b7d', 1, 2, 'invalid')"
    )
    conn.execute("INSERT INTO search.frames_fts (rowid, text) VALUES (1, ?)", [query])
    conn.execute("CREATE VIRTUAL TABLE temp.words USING fts5vocab(search, frames_fts, 'row')")
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
    _as_version_6(db)
    r = subprocess.run(
        [*PROXY, "search", "permission denied", "--db", str(db)], capture_output=True
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.count(b"\n") == 1 and b"capture 1 #0" in r.stdout
    assert b"[permission denied]" in r.stdout  # the phrase, whole
    r = subprocess.run([*PROXY, "search", "denied", "--db", str(db), "--json"], capture_output=True)
    hits = json.loads(r.stdout)
    assert [h["seq"] for h in hits] == [1, 0]
    assert b"\x1b" not in r.stdout and b"\x07" not in r.stdout
    r = subprocess.run([*PROXY, "search", "denied", "--db", str(db)], capture_output=True)
    assert b"\x1b" not in r.stdout and b"\\x1b" in r.stdout  # shown as an escape, not acted on
    r = subprocess.run([*PROXY, "search", "nowhere", "--db", str(db)], capture_output=True)
    assert r.returncode == 0 and r.stdout == b"" and b"nothing matches" in r.stderr
    r = subprocess.run([*PROXY, "search", "***", "--db", str(db)], capture_output=True)
    assert r.returncode == 2 and r.stderr.count(b"\n") == 1 and b"Traceback" not in r.stderr
    r = subprocess.run(
        [*PROXY, "search", "denied", "--db", str(db), "--capture", "9"], capture_output=True
    )
    assert r.returncode == 2 and b"no capture" in r.stderr


def test_stderr_and_events_are_searched_beside_frames(db: Path, tmp_path: Path) -> None:
    """The cause of a failure is often only on the agent's stderr or in an event."""
    from support.hostile import record_script

    steps = (
        [
            ("c2a", {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {}}),
            ("stderr", "\x1b[2mT0\x1b[0m \x1b[31mERROR\x1b[0m cannot be used with root/sudo\n"),
            ("a2c", {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "Internal"}}),
        ]
        + [("stderr", f"zulu line {i}\n") for i in range(7)]
        + [("a2c", {"jsonrpc": "2.0", "method": "_zulu", "params": {"n": i}}) for i in range(5)]
    )
    record_script(db, tmp_path, steps)
    conn = connect(db, create=False)
    migrate(conn)
    catch_up(conn)
    (hit,) = search(conn, "root/sudo")
    assert (hit.source, hit.kind, hit.seq) == ("stderr", "stderr", None)
    assert hit.match == "root/sudo" and "\x1b" not in hit.before + hit.after
    (hit,) = search(conn, "error cannot")  # the colour between them is not a word
    assert hit.source == "stderr"
    (phrase,) = search(conn, '"cannot be used"')
    assert phrase.match == "cannot be used"
    exited = search(conn, "agent exited")
    assert [h.source for h in exited] == ["event"] and exited[0].kind == "exit"
    # the stderr writes (as the relay read them) and 5 frames, three at a time, each once
    writes = sum(b"zulu" in bytes(d) for (d,) in db_rows(db, "SELECT data FROM stderr"))  # type: ignore[arg-type]
    seen, cursor, pages = [], None, 0
    while True:
        page = search(conn, "zulu", limit=3, after=cursor)
        seen += [(h.source, h.rowid) for h in page]
        pages += 1
        if page.next is None:
            break
        cursor = page.next
    assert len(seen) == len(set(seen)) == 5 + writes and pages == -(-(5 + writes) // 3)
    assert sorted(s for s, _ in seen) == ["frame"] * 5 + ["stderr"] * writes

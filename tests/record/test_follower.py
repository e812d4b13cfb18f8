"""The search index kept up as frames are stored: the recorder's follower fills
``<db>.search`` while it records, so the first search after a recording indexes nothing;
deleting a capture takes it out of the index; the file is private like the database."""

from __future__ import annotations

import os
import signal
import sqlite3
import stat
import subprocess
from pathlib import Path

import pytest
from support.proc import PROXY, db_rows, peer, run_proxy

from acp_proxy.record.follower import INDEX_WAIT_ENV, START_AFTER, Follower
from acp_proxy.store.db import connect
from acp_proxy.store.index import search_path
from acp_proxy.store.search import search


def _record(db: Path, tmp_path: Path, lines: list[bytes], wait: str = "120") -> bytes:
    """Record ``lines`` from an agent; the recorder may take ``wait`` seconds to index them
    at its end (a loaded machine: its default bound is 2 s). Its stderr."""
    source = tmp_path / "out.bin"
    source.write_bytes(b"".join(line + b"\n" for line in lines))
    env = {**os.environ, INDEX_WAIT_ENV: wait}
    r = run_proxy(db, peer("echo_agent.py", str(tmp_path / "copy.bin"), str(source)), env=env)
    assert r.returncode == 0, r.stderr
    return r.stderr


def _chunk(i: int, word: str = "filler") -> bytes:
    return (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":'
        b'{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"'
        + f"{word} {i}".encode()
        + b'"}}}}'
    )


def _marker(db: Path) -> dict[str, int]:
    """How far the index file says it got, read from the file alone."""
    conn = sqlite3.connect(f"file:{search_path(db)}?mode=ro", uri=True)
    try:
        return {name: upto for name, upto in conn.execute("SELECT name, upto FROM search_index")}
    finally:
        conn.close()


def _proxy(db: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*PROXY, *args, "--db", str(db)], capture_output=True, timeout=60)


@pytest.mark.parametrize("frames", [3000, START_AFTER + 5000])  # indexed at the end; beside
def test_a_recording_is_searchable_without_indexing_on_demand(
    db: Path, tmp_path: Path, frames: int
) -> None:
    _record(db, tmp_path, [*(_chunk(i) for i in range(frames)), _chunk(frames, "xylophone")])
    # the recorder indexed everything before it exited: frames, stderr and events
    ((last, events),) = db_rows(
        db, "SELECT (SELECT MAX(id) FROM messages), (SELECT MAX(id) FROM events)"
    )
    assert last is not None and int(str(last)) > frames
    marker = _marker(db)
    assert marker["frames"] == last and marker["events"] == events
    assert stat.S_IMODE(search_path(db).stat().st_mode) == 0o600
    # a read-only connection that indexes nothing finds the last frame's word
    conn = connect(db, readonly=True)
    hits = search(conn, "xylophone")
    conn.close()
    assert [(h.capture_id, h.seq) for h in hits] == [(1, frames)]


def test_an_index_left_behind_is_topped_up_by_the_next_search(db: Path, tmp_path: Path) -> None:
    # a recorder given no time to index at its end (ACP_PROXY_INDEX_WAIT=0) leaves it all
    _record(db, tmp_path, [*(_chunk(i) for i in range(300)), _chunk(300, "xylophone")], "0")
    assert not search_path(db).exists() or _marker(db).get("frames", 0) == 0
    r = _proxy(db, "search", "xylophone")
    assert r.returncode == 0 and r.stdout.count(b"xylophone") == 1, r.stderr
    ((last,),) = db_rows(db, "SELECT MAX(id) FROM messages")
    assert _marker(db)["frames"] == last


@pytest.mark.parametrize("wait", ["soon", "-1", "nan", "1e9"])
def test_a_bad_index_wait_is_said_and_the_default_taken(
    db: Path, tmp_path: Path, wait: str
) -> None:
    stderr = _record(db, tmp_path, [_chunk(0, "xylophone")], wait)
    assert f"{INDEX_WAIT_ENV}={wait!r} is not a number from 0 to 86400".encode() in stderr
    ((last,),) = db_rows(db, "SELECT MAX(id) FROM messages")
    assert _marker(db)["frames"] == last  # indexed within the default bound


def test_what_a_starved_follower_leaves_is_indexed_by_the_recorder(
    db: Path, tmp_path: Path
) -> None:
    # the follower runs at a lower priority: on a loaded machine it may have done little
    # when the recorder ends; here it is stopped outright, and the index is whole anyway
    _record(db, tmp_path, [_chunk(i) for i in range(2000)])
    for suffix in ("", "-wal", "-shm"):  # as if nothing had indexed it yet
        Path(f"{search_path(db)}{suffix}").unlink(missing_ok=True)
    follower = Follower(db, finish_s=0.5)
    follower.committed(START_AFTER)  # the process starts
    proc = follower._proc
    assert proc is not None
    os.kill(proc.pid, signal.SIGSTOP)
    follower.finish()
    assert proc.poll() is not None  # ended, not left behind
    ((last,),) = db_rows(db, "SELECT MAX(id) FROM messages")
    assert _marker(db)["frames"] == last


def test_rm_leaves_no_stale_hit(db: Path, tmp_path: Path) -> None:
    _record(db, tmp_path, [_chunk(0, "keepme")])
    _record(db, tmp_path, [_chunk(i, "goneword") for i in range(20)])
    assert _proxy(db, "rm", "2").returncode == 0
    # the next capture takes the ids of the deleted one and its frames
    _record(db, tmp_path, [_chunk(i, "newword") for i in range(20)])
    r = _proxy(db, "search", "goneword")
    assert r.returncode == 0 and r.stdout == b"", r.stdout
    r = _proxy(db, "search", "newword", "--limit", "100")
    assert r.stdout.count(b"newword") == 20 and b"capture 2 #" in r.stdout  # ids taken again
    assert b"keepme" in _proxy(db, "search", "keepme").stdout


def test_an_index_file_others_can_read_is_refused(db: Path, tmp_path: Path) -> None:
    _record(db, tmp_path, [_chunk(0, "secret")])
    os.chmod(search_path(db), 0o644)
    r = _proxy(db, "search", "secret")
    assert r.returncode != 0 and b"refusing the search index" in r.stderr
    assert b"secret" not in r.stdout and b"Traceback" not in r.stderr

"""Files that hold recordings are private: a database others can read or write is refused
(forwarding goes on, unrecorded), directories and exports are created for us alone."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import stat
import subprocess
from pathlib import Path

import pytest
from support.proc import PROXY, db_rows, peer, recorder_processes, run_proxy, wait_recorded
from support.ws import RAW, upstream_server
from websockets.asyncio.client import connect

LINE = b'{"jsonrpc":"2.0","method":"x"}\n'


@pytest.fixture
def recorded(demo_copy: Path) -> Path:
    return demo_copy


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(
    "args",
    [["captures"], ["show"], ["tail"], ["tools"], ["export"]],
    ids=" ".join,
)
@pytest.mark.parametrize("mode", [0o644, 0o660, 0o606])
def test_a_database_others_can_read_or_write_is_refused(
    recorded: Path, args: list[str], mode: int
) -> None:
    recorded.chmod(mode)
    r = subprocess.run([*PROXY, *args, "--db", str(recorded)], capture_output=True, timeout=60)
    assert r.returncode == 3 and r.stdout == b""
    assert r.stderr.count(b"\n") == 1, r.stderr
    assert f"chmod 600 {recorded}".encode() in r.stderr
    assert f"mode {mode:04o}".encode() in r.stderr


def test_a_wal_file_others_can_read_is_refused_too(recorded: Path) -> None:
    wal = Path(f"{recorded}-wal")
    wal.write_bytes(b"")
    wal.chmod(0o644)
    r = subprocess.run([*PROXY, "show", "--db", str(recorded)], capture_output=True, timeout=60)
    assert r.returncode == 3 and f"chmod 600 {wal}".encode() in r.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file away needs root")
def test_a_database_of_another_user_is_refused(recorded: Path) -> None:
    os.chown(recorded, 54321, -1)
    r = subprocess.run([*PROXY, "show", "--db", str(recorded)], capture_output=True, timeout=60)
    assert r.returncode == 3 and r.stderr.count(b"\n") == 1
    assert b"belongs to another user (uid 54321)" in r.stderr


def test_record_forwards_and_warns_once_when_the_database_is_not_private(
    recorded: Path, tmp_path: Path
) -> None:
    recorded.chmod(0o666)
    before = db_rows(recorded, "SELECT count(*) FROM messages")
    source = tmp_path / "out.bin"
    source.write_bytes(LINE * 3)
    copy = tmp_path / "in.bin"
    result = run_proxy(
        recorded, peer("echo_agent.py", str(copy), str(source), "", "--exit", "7"), LINE
    )
    assert result.returncode == 7  # the agent's, as always
    assert result.stdout == LINE * 3 and copy.read_bytes() == LINE
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("acp-proxy: warning: not recording: ")
    assert f"chmod 600 {recorded}" in lines[0] and "still forwarded" in lines[0]
    assert recorder_processes(recorded) == []
    assert db_rows(recorded, "SELECT count(*) FROM messages") == before
    assert list(tmp_path.glob("rec.sqlite.*")) == []  # no spill, no log beside it
    assert _mode(recorded) == 0o666  # not ours to change


async def test_ws_relays_unrecorded_when_the_database_is_not_private(recorded: Path) -> None:
    recorded.chmod(0o644)
    async with upstream_server() as up:
        proc = await asyncio.create_subprocess_exec(
            *PROXY, "ws", "--db", str(recorded), "--listen", "127.0.0.1:0", "--upstream", up.url,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert proc.stderr is not None
        warning = (await asyncio.wait_for(proc.stderr.readline(), 30)).decode()
        listening = (await asyncio.wait_for(proc.stderr.readline(), 30)).decode()
        assert "not recording" in warning and f"chmod 600 {recorded}" in warning
        url = listening.split("listening on ", 1)[1].split(" ", 1)[0]
        async with connect(url + "/acp", **RAW) as ws:
            await ws.send("hello")
            assert await ws.recv() == "hello"
        proc.terminate()
        assert await asyncio.wait_for(proc.wait(), 30) == 0
        # the warning is said once; each connection gets its one line, saying so
        rest = (await proc.stderr.read()).decode().splitlines()
        assert len(rest) == 1 and "not recorded: closed" in rest[0], rest
    assert db_rows(recorded, "SELECT count(*) FROM captures WHERE transport = 'ws'") == [(0,)]


def test_every_directory_level_created_for_a_database_is_0700(tmp_path: Path) -> None:
    db = tmp_path / "a" / "b" / "c" / "rec.sqlite"
    tmp_path.chmod(0o755)
    r = subprocess.run(
        [*PROXY, "record", "--db", str(db), "--", "cat"],
        input=LINE,
        capture_output=True,
        timeout=60,
        umask=0o022,
    )
    assert r.returncode == 0 and r.stdout == LINE
    wait_recorded(db)
    assert [_mode(d) for d in (db.parents[2], db.parents[1], db.parent)] == [0o700] * 3
    assert _mode(db) == 0o600 and _mode(tmp_path) == 0o755  # only what we created


@pytest.mark.parametrize(
    "fmt", [["jsonl"], ["html"], ["patch"], ["asciicast", "--terminal", "term_1"]], ids=str
)
@pytest.mark.parametrize("existed", [False, True])
def test_exports_are_written_0600(
    recorded: Path, tmp_path: Path, fmt: list[str], existed: bool
) -> None:
    out = tmp_path / "export.out"
    if existed:
        out.write_text("old, longer than nothing at all " * 1000)
        out.chmod(0o666)
    r = subprocess.run(
        [*PROXY, "export", "--db", str(recorded), "--format", *fmt, "-o", str(out)],
        capture_output=True,
        timeout=60,
        umask=0,
    )
    assert r.returncode == 0, r.stderr
    assert _mode(out) == 0o600
    assert b"old, longer" not in out.read_bytes() and out.stat().st_size > 0


def test_an_empty_file_only_the_umask_made_readable_is_made_private(db: Path) -> None:
    # `sqlite3 recordings.sqlite`, or a script's connect, before the first recording
    sqlite3.connect(db).close()
    db.chmod(0o644)
    r = subprocess.run([*PROXY, "demo", "--db", str(db)], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert _mode(db) == 0o600
    assert b"not recording" not in r.stderr


@pytest.mark.parametrize("mode", [0o666, 0o646, 0o664])
def test_an_empty_file_others_could_write_is_still_refused(db: Path, mode: int) -> None:
    sqlite3.connect(db).close()
    db.chmod(mode)
    r = subprocess.run([*PROXY, "captures", "--db", str(db)], capture_output=True, timeout=60)
    assert r.returncode == 3 and f"chmod 600 {db}".encode() in r.stderr
    assert _mode(db) == mode

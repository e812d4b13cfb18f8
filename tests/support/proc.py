"""Run the proxy and read what it recorded: real processes, real SQLite files."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from support.paths import PEERS

PROXY = [sys.executable, "-m", "acp_proxy"]


def peer(name: str, *args: str) -> list[str]:
    """The command line of a test peer in tests/peers/."""
    return [sys.executable, str(PEERS / name), *args]


def run_proxy(
    db: Path,
    agent: Sequence[str],
    stdin: bytes = b"",
    *,
    extra: Sequence[str] = (),
    timeout: float = 60,
    env: dict[str, str] | None = None,
    recorded: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    """``acp-proxy record`` around ``agent``; unless ``recorded`` is False, also wait for
    its recorder, which outlives the relay by design (a loaded machine: it may still be
    storing the last frames, or indexing them, when the command has exited)."""
    result = subprocess.run(
        [*PROXY, "record", "--db", str(db), *extra, "--", *agent],
        input=stdin,
        capture_output=True,
        timeout=timeout,
        env=env,
    )
    if recorded:
        wait_recorded(db)
    return result


def db_rows(db: Path, sql: str, args: Sequence[object] = ()) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def recorder_processes(db: Path) -> list[int]:
    """Pids of recorder processes writing ``db``."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"acp_proxy.record.child" in cmd and str(db).encode() in cmd:
            pids.append(int(entry.name))
    return pids


def wait_recorded(db: Path, timeout: float = 120) -> None:
    """Wait until no recorder is writing ``db`` any more (they finish after the relay)."""
    deadline = time.monotonic() + timeout
    while recorder_processes(db):
        if time.monotonic() > deadline:
            raise AssertionError(f"a recorder of {db} is still running after {timeout} s")
        time.sleep(0.05)


def wait_ended(db: Path, count: int, timeout: float = 30) -> None:
    """Wait until ``db`` holds ``count`` captures and every one of them has ended (a
    listener goes on after its connections end; its captures say when they did)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if db.exists():
            ended = db_rows(db, "SELECT ended_at IS NOT NULL FROM captures")
            if len(ended) == count and all(e for (e,) in ended):
                return
        time.sleep(0.05)
    raise AssertionError(f"{db} does not hold {count} ended captures after {timeout} s")

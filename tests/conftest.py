"""Shared fixtures: real processes, real SQLite files, no mocks."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

PEERS = Path(__file__).parent / "peers"
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
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*PROXY, "record", "--db", str(db), *extra, "--", *agent],
        input=stdin,
        capture_output=True,
        timeout=timeout,
        env=env,
    )


def db_rows(db: Path, sql: str, args: Sequence[object] = ()) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "rec.sqlite"


@pytest.fixture(autouse=True)
def _no_env_db(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tests never touch the user's default database."""
    monkeypatch.setenv("ACP_PROXY_DB", str(tmp_path / "default.sqlite"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    os.environ.pop("PYTHONSTARTUP", None)


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
    import time

    deadline = time.monotonic() + timeout
    while recorder_processes(db):
        if time.monotonic() > deadline:
            raise AssertionError(f"a recorder of {db} is still running after {timeout} s")
        time.sleep(0.05)

"""A recorder that outlives its relay holds nothing of the editor's (docs/reliability.md).

An editor waits for the agent's stdout and stderr to close before it calls the agent gone
(Node's `close` event, Python's `subprocess.run`). The recorder finishes after the relay
by design; it must not keep the relay's stderr open while it does, and what it still has
to say goes beside the database and into the capture's events.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import threading
from pathlib import Path

from support.proc import PROXY, db_rows, peer, recorder_processes, wait_recorded

from acp_proxy.record.sqlite import Database


def test_stderr_closes_with_the_relay_while_the_recorder_catches_up(db: Path) -> None:
    """The recorder is held behind (the database locked) when the relay exits: the
    editor's stderr ends with the relay all the same, and the recorder then stores all."""
    Database(db).close()  # the schema, so that the lock below is on a recording database
    locker = sqlite3.connect(db, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")  # held until the relay's stderr has closed
    proc = subprocess.Popen(
        [*PROXY, "record", "--db", str(db), "--",
         *peer("lifecycle_agent.py", "flood", "20000")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "ACP_PROXY_RECORDER_PATIENCE": "120"},  # waits for the lock
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    ended = threading.Event()
    recorders_at_eof: list[int] = []

    def read_stderr() -> None:
        assert proc.stderr is not None
        proc.stderr.read()
        recorders_at_eof.extend(recorder_processes(db))
        ended.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        proc.stdin.close()  # the flood agent exits once its stdin is closed
        forwarded = 0
        while chunk := proc.stdout.read1(1 << 20):  # type: ignore[attr-defined]
            forwarded += chunk.count(b"\n")
        assert proc.wait(timeout=60) == 0 and forwarded == 20_000
        assert ended.wait(timeout=60), "the relay's stderr stayed open after it exited"
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    wait_recorded(db)
    assert recorders_at_eof, "no recorder was left behind: the lock proves nothing"
    assert db_rows(db, "SELECT message_count FROM captures") == [(20_000,)]


def test_what_the_recorder_says_after_the_relay_goes_is_logged_and_recorded(
    tmp_path: Path, db: Path
) -> None:
    subprocess.run([*PROXY, "demo", "--db", str(db)], check=True, capture_output=True)
    locker = sqlite3.connect(db, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")  # held past the relay's end and the quiet period
    source = tmp_path / "out.bin"
    source.write_bytes(b'{"jsonrpc":"2.0","method":"while-locked"}\n' * 5)
    agent = peer("echo_agent.py", str(tmp_path / "in.bin"), str(source))
    done = subprocess.run(
        [*PROXY, "record", "--db", str(db), "--", *agent],
        input=b"{}\n",
        capture_output=True,
        timeout=60,
        # it waits for the lock, and says it lasts after a second (not the usual five)
        env={
            **os.environ,
            "ACP_PROXY_RECORDER_PATIENCE": "120",
            "ACP_PROXY_RECORDER_QUIET_LOCK": "1",
        },
    )
    assert done.returncode == 0 and done.stdout == source.read_bytes()
    assert recorder_processes(db)  # still there, waiting for the lock
    deadline_log = Path(f"{db}.log")
    for _ in range(300):  # the recorder says the lock lasts, to the log (after a second)
        if deadline_log.exists() and b"cannot write" in deadline_log.read_bytes():
            break
        threading.Event().wait(0.05)
    locker.execute("ROLLBACK")
    locker.close()
    wait_recorded(db)
    log = deadline_log.read_text()
    assert "database is locked" in log and "again" in log
    assert deadline_log.stat().st_mode & 0o777 == 0o600
    notes = db_rows(
        db,
        "SELECT e.detail FROM events e JOIN captures c ON c.id = e.capture_id "
        "WHERE e.kind = 'recorder_note' AND c.label IS NOT 'demo'",
    )
    said = [json.loads(str(d))["message"] for (d,) in notes]
    assert any("database is locked" in m for m in said) and any("again" in m for m in said)
    assert b"locked" not in done.stderr  # a lock of our own writers, not news at first

"""Losses that must reach the database, and journals nothing brought in must be seen.

A relay and its recorder both gone before the journal was read; a recorder killed while
its relay was closing; a disk full before recording started; a capture whose `CLOSE` record
a full disk refused. In each case the traffic, or the account of its loss, reaches the
database, and until it does every reader says what lies beside it and how to bring it in.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from support.proc import PROXY, db_rows, peer, recorder_processes, run_proxy, wait_recorded


def _flood(db: Path, n: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*PROXY, "record", "--db", str(db), "--", *peer("lifecycle_agent.py", "flood", str(n))],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _recorder(db: Path) -> int:
    deadline = time.monotonic() + 30
    while not (found := recorder_processes(db)):
        assert time.monotonic() < deadline, "no recorder started"
        time.sleep(0.02)
    return found[0]


def cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PROXY, *args, "--db", str(db)], capture_output=True, text=True,
                          timeout=60)  # fmt: skip


def test_a_journal_both_processes_left_is_shown_then_brought_in(db: Path) -> None:
    proc = _flood(db, 50_000)
    recorder = _recorder(db)
    os.kill(recorder, signal.SIGSTOP)  # it reads nothing more
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.close()
    proc.stderr.read()
    assert proc.wait(timeout=60) == 0
    os.kill(recorder, signal.SIGKILL)  # and now both are gone
    deadline = time.monotonic() + 10
    while recorder_processes(db) and time.monotonic() < deadline:
        time.sleep(0.02)
    for reader in (["captures"], ["show"], ["tools"]):
        r = cli(db, *reader)
        assert "never brought in" in r.stderr and f"import-spill --db {db}" in r.stderr, reader
    # the next writer brings it in at its start
    run_proxy(db, peer("echo_agent.py", os.devnull, os.devnull))
    counts = sorted(n for (n,) in db_rows(db, "SELECT message_count FROM captures"))
    assert counts == [0, 50_000]
    assert "never brought in" not in cli(db, "captures").stderr


def test_a_journal_of_a_killed_relay_brought_in_later_ends_at_its_last_record(db: Path) -> None:
    # both processes killed mid-flood: no CLOSE record; brought in a while later, the
    # capture ended when its last record was written, not when it was brought in
    proc = _flood(db, 5000)
    recorder = _recorder(db)
    os.kill(recorder, signal.SIGSTOP)
    assert proc.stderr is not None
    wait_for = time.monotonic() + 30
    while not list(db.parent.glob(f"{db.name}.journal.*.acp")) and time.monotonic() < wait_for:
        time.sleep(0.02)
    time.sleep(0.3)  # the flood is in the journal
    proc.kill()
    proc.wait(timeout=60)
    os.kill(recorder, signal.SIGKILL)
    while recorder_processes(db) and time.monotonic() < wait_for:
        time.sleep(0.02)
    time.sleep(1.5)  # later
    before = time.time()
    imported = cli(db, "import-spill")
    assert imported.returncode == 0, imported.stderr
    [(started, ended, ended_ns, reason)] = db_rows(
        db, "SELECT started_at, ended_at, ended_ns, end_reason FROM captures"
    )
    assert reason == "proxy_gone"
    start, end = (datetime.fromisoformat(t.replace("Z", "+00:00")) for t in (started, ended))
    assert end.timestamp() < before - 1, (started, ended, before)
    assert abs((end - start).total_seconds() - ended_ns / 1e9) < 0.002


def test_a_recorder_killed_while_its_relay_closes_is_replaced(db: Path) -> None:
    proc = _flood(db, 50_000)
    recorder = _recorder(db)
    os.kill(recorder, signal.SIGSTOP)
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.close()
    time.sleep(0.3)  # the agent ends, the relay waits for its recorder
    os.kill(recorder, signal.SIGKILL)
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0
    wait_recorded(db)
    if db_rows(db, "SELECT message_count FROM captures") != [(50_000,)]:
        raise AssertionError(f"not brought in; the relay said: {err!r}")
    assert "a new one carries on" in err


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A directory on a small file system of its own (tmpfs), to be filled by the test."""
    where = tmp_path / "small"
    where.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(where)],
                       capture_output=True, text=True)  # fmt: skip
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small file system here: {r.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _fill(where: Path) -> Path:
    filler = where / "filler"
    with open(filler, "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass
    return filler


def test_a_disk_full_before_recording_starts_still_reaches_the_database(
    full_disk: Path,
) -> None:
    db = full_disk / "rec.sqlite"
    subprocess.run([*PROXY, "demo", "--db", str(db)], check=True, capture_output=True)
    wait_recorded(db)
    filler = _fill(full_disk)
    n = 20_000
    result = run_proxy(db, peer("lifecycle_agent.py", "flood", str(n)))
    assert result.returncode == 0 and result.stdout.count(b"\n") == n  # all forwarded
    said = result.stderr.decode()
    assert "could not be recorded; the loss is noted in" in said
    r = cli(db, "captures")
    assert "loss ledger not yet written down" in r.stderr, (said, r.stderr, os.listdir(full_disk))
    filler.unlink()  # space again: the next writer writes the loss down
    imported = cli(db, "import-spill")
    assert imported.returncode == 0, imported.stderr
    rows = db_rows(db, "SELECT exit_code, end_reason, lost_count FROM captures ORDER BY id")
    assert len(rows) == 2, (rows, imported.stderr)
    exit_code, end_reason, lost = rows[1]
    assert exit_code == 0 and end_reason == "not_recorded" and lost == n
    listing = cli(db, "captures")
    assert "not yet written down" not in listing.stderr
    assert "exit 0, incomplete" in listing.stdout.splitlines()[-1]  # the agent's own exit

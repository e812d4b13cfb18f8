"""A recorder that starts over carries on exactly where the database says the journal was
read to: the relay's side (:class:`RecorderLink`) and real recorder processes, killed on
purpose at chosen points."""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest
from support.proc import wait_recorded

from acp_proxy.protocol.frames import Direction
from acp_proxy.record.link import CaptureMeta, RecorderLink

pytestmark = pytest.mark.faults


def _stored(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0])
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()


def _wait_stored(db: Path, n: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while _stored(db) < n:
        assert time.monotonic() < deadline, f"fewer than {n} frames stored"
        time.sleep(0.02)


def _wait_dead(pid: int) -> None:
    """Until ``pid`` is dead and its descriptors are closed (its last thread gone), not yet
    reaped by its parent: a leader thread shows as a zombie while others still exit."""
    while Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z" or (
        len(list(Path(f"/proc/{pid}/task").iterdir())) > 1
    ):
        time.sleep(0.01)


def _line(i: int) -> bytes:
    return b'{"jsonrpc":"2.0","method":"_n","params":{"i":%d}}\n' % i


def test_a_recorder_killed_after_a_batch_ending_on_a_line_boundary_loses_nothing(
    db: Path,
) -> None:
    # Every chunk is whole lines, so when the first recorder commits, no line is left
    # unfinished: where a new recorder must start is the end of the last record read —
    # a record boundary, not a byte into that record.
    warnings: list[str] = []
    link = RecorderLink(db, warn=warnings.append)
    tap = link.open_capture(CaptureMeta(agent_command=["x"]))
    for i in range(3):
        tap.chunk(Direction.AGENT_TO_CLIENT, _line(i))
    _wait_stored(db, 3)
    first = link.recorder_pid
    assert first is not None
    os.kill(first, signal.SIGKILL)
    _wait_dead(first)
    for i in range(3, 10):  # the first ring after the death starts a new recorder
        tap.chunk(Direction.AGENT_TO_CLIENT, _line(i))
    assert link.recorder_pid != first
    tap.close()
    link.close(wait=30)
    wait_recorded(db)
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT raw, anomalies FROM messages ORDER BY seq").fetchall()
    assert rows == [(_line(i)[:-1], None) for i in range(10)]
    assert conn.execute("SELECT lost_count, lost_bytes FROM captures").fetchall() == [(0, 0)]
    assert warnings == [
        "warning: the recorder process ended; a new one carries on from the journal"
    ]

"""Fault drills at full size: kill the relay or its recorder, fill the disk, lock the database.

Each drill floods the relay with N frames and prints what was sent, what reached the other
side (forwarded), what the database holds (stored) and what it says was lost, and checks that
forwarded ⊆ stored or that the difference is written down exactly.

    python bench/faults.py            # 1 000 000 frames per drill
    python bench/faults.py --frames 200000
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_stdio import recorders

HERE = Path(__file__).resolve().parent
AGENT = [sys.executable, str(HERE / "flood_agent.py"), "flood"]
PROXY = [sys.executable, "-m", "acp_proxy"]
SIZE = 200


def wait_recorded(db: Path, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while recorders(db) and time.monotonic() < deadline:
        time.sleep(0.05)


def flood(db: Path, n: int, **popen: object) -> subprocess.Popen[bytes]:
    argv = [*PROXY, "record", "--db", str(db), "--grace", "120", "--",
            *AGENT, "--count", str(n), "--size", str(SIZE)]  # fmt: skip
    return subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen  # type: ignore[arg-type]
    )  # fmt: skip


def read_some(proc: subprocess.Popen[bytes], at_least: int) -> bytes:
    assert proc.stdout is not None
    got = bytearray()
    while len(got) < at_least:
        chunk = proc.stdout.read1(1 << 20)  # type: ignore[attr-defined]
        if not chunk:
            break
        got += chunk
    return bytes(got)


def stored(db: Path, capture: int = 1) -> tuple[int, int, int, int, int]:
    """(frames, bytes incl. newlines, lost frames, lost bytes, gaps) of a capture."""
    conn = sqlite3.connect(db)
    try:
        frames, size = conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(size + terminated), 0) FROM messages "
            "WHERE capture_id = ? AND direction = 'a2c'",
            [capture],
        ).fetchone()
        lost, lost_bytes = conn.execute(
            "SELECT lost_count, lost_bytes FROM captures WHERE id = ?", [capture]
        ).fetchone()
        gaps = conn.execute(
            "SELECT COUNT(*) FROM events WHERE capture_id = ? AND kind = 'gap'", [capture]
        ).fetchone()[0]
    finally:
        conn.close()
    return frames, size, lost, lost_bytes, gaps


def report(name: str, sent: int, forwarded: bytes, db: Path, *, exact: bool) -> bool:
    frames, size, lost, lost_bytes, gaps = stored(db)
    fwd_frames = forwarded.count(b"\n")
    ok = size + lost_bytes >= len(forwarded) if not exact else size + lost_bytes == len(forwarded)
    print(
        f"{name:<34} sent {sent:>9,}  forwarded {fwd_frames:>9,}  stored {frames:>9,}  "
        f"lost {lost:>9,} ({lost_bytes:,} B, {gaps} gaps)  {'ok' if ok else 'MISMATCH'}"
    )
    return ok


def drill_kill_relay(tmp: Path, n: int) -> bool:
    db = tmp / "kill-relay" / "r.sqlite"
    db.parent.mkdir()
    proc = flood(db, n)
    forwarded = read_some(proc, n * SIZE // 3)
    proc.kill()
    assert proc.stdout is not None
    forwarded += proc.stdout.read()
    proc.wait()
    wait_recorded(db)
    return report("SIGKILL of the relay", n, forwarded, db, exact=False)


def drill_kill_recorder(tmp: Path, n: int) -> bool:
    db = tmp / "kill-recorder" / "r.sqlite"
    db.parent.mkdir()
    proc = flood(db, n)
    forwarded = read_some(proc, n * SIZE // 10)
    for pid in recorders(db):
        os.kill(pid, signal.SIGKILL)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.close()
    forwarded += proc.stdout.read()
    proc.wait()
    wait_recorded(db)
    return report("SIGKILL of the recorder", n, forwarded, db, exact=True)


def drill_disk_full(tmp: Path, n: int) -> bool:
    db = tmp / "disk-full" / "r.sqlite"
    db.parent.mkdir()
    limit = max(2 << 20, n * SIZE // 8)

    def small_disk() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc = flood(db, n, preexec_fn=small_disk)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.close()
    forwarded = proc.stdout.read()
    proc.wait()
    wait_recorded(db)
    subprocess.run([*PROXY, "import-spill", "--db", str(db)], capture_output=True)
    return report(f"disk full (files <= {limit >> 20} MiB)", n, forwarded, db, exact=True)


def drill_locked(tmp: Path, n: int) -> bool:
    db = tmp / "locked" / "r.sqlite"
    db.parent.mkdir()
    subprocess.run([*PROXY, "record", "--db", str(db), "--", "true"], check=True)
    wait_recorded(db)
    locker = sqlite3.connect(db, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    proc = flood(db, n)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.close()
    t0 = time.perf_counter()
    forwarded = proc.stdout.read()
    proc.wait()
    took = time.perf_counter() - t0
    time.sleep(1)
    locker.execute("ROLLBACK")
    locker.close()
    wait_recorded(db)
    frames, size, lost, _, _ = stored(db, 2)
    ok = size == len(forwarded) and lost == 0
    lines = forwarded.count(b"\n")
    print(
        f"{'database locked during the flood':<34} sent {n:>9,}  forwarded "
        f"{lines:>9,} in {took:.1f} s  stored {frames:>9,}  lost {lost:>9,}  "
        f"{'ok' if ok else 'MISMATCH'}"
    )
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=1_000_000)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="acp-faults-"))
    try:
        results = [
            drill_kill_relay(tmp, a.frames),
            drill_kill_recorder(tmp, a.frames),
            drill_disk_full(tmp, a.frames),
            drill_locked(tmp, a.frames),
        ]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())

"""A big capture recorded through the proxy, and the peak memory of a command reading one.

What belongs here: :func:`record_flood` (``acp-proxy record`` in front of
``flood_agent.py flood``: ``frames`` message chunks of ``size`` bytes, waited for until the
recorder has finished the capture) and :func:`peak_rss_kib` (run ``acp-proxy ARGS`` and read
its peak resident set size from /proc while it runs). ``bench_memory.py`` measures with them,
and the tests build their big captures with them (a bench imports nothing of the tests; the
tests may use this). Standard library only.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["PROXY", "peak_rss_kib", "record_flood"]

HERE = Path(__file__).resolve().parent
PROXY = [sys.executable, "-m", "acp_proxy"]


def record_flood(db: Path, frames: int, size: int = 200, *, timeout: float = 600) -> None:
    """Record ``frames`` chunks of ``size`` bytes into ``db``; return once they are stored."""
    agent = [sys.executable, str(HERE / "flood_agent.py"), "flood", "--count", str(frames)]
    subprocess.run(
        [*PROXY, "record", "--db", str(db), "--", *agent, "--size", str(size)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        check=True,
        timeout=timeout,
    )
    deadline = time.monotonic() + timeout
    while not _finished(db):  # the recorder finishes after the relay
        if time.monotonic() > deadline:
            raise RuntimeError(f"the recording in {db} did not finish in {timeout} s")
        time.sleep(0.05)


def _finished(db: Path) -> bool:
    conn = sqlite3.connect(db)
    try:
        row = conn.execute("SELECT finished_at FROM captures").fetchone()
    finally:
        conn.close()
    return bool(row and row[0])


def peak_rss_kib(args: list[str], *, cwd: Path | None = None) -> int:
    """Run ``acp-proxy ARGS`` (stdout discarded); its peak resident set size (``VmHWM``)."""
    proc = subprocess.Popen([*PROXY, *args], stdout=subprocess.DEVNULL, cwd=cwd)
    peak = 0
    while proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]))
        except OSError:
            pass
        time.sleep(0.02)
    if proc.returncode != 0:
        raise RuntimeError(f"acp-proxy {' '.join(args)} failed with {proc.returncode}")
    return peak

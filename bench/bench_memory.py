"""Peak memory of the commands that read a whole capture: ``show --json``, ``export``
(jsonl and html), on a big capture recorded through the proxy.

The capture is recorded with ``record`` in front of ``bench/flood_agent.py`` (message chunks
of ``--size`` bytes), then each command runs in a process of its own, output to
/dev/null, and its peak resident set size (``ru_maxrss``) is reported.

    /work/venv/bin/python bench/bench_memory.py --frames 200000
    PYTHONPATH=/path/to/another/checkout python bench/bench_memory.py   # compare a version
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMMANDS = {
    "show --json": ["show", "--json"],
    "export jsonl": ["export", "--format", "jsonl"],
    "export html": ["export", "--format", "html"],
}


def record(db: Path, frames: int, size: int) -> None:
    agent = [sys.executable, str(HERE / "flood_agent.py"), "flood", "--count", str(frames)]
    subprocess.run(
        [sys.executable, "-m", "acp_proxy", "record", "--db", str(db), "--", *agent, "--size",
         str(size)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=True,
    )  # fmt: skip
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:  # the recorder finishes after the relay
        conn = sqlite3.connect(db)
        done = conn.execute("SELECT finished_at FROM captures").fetchone()
        conn.close()
        if done and done[0]:
            return
        time.sleep(0.2)
    raise SystemExit("the recording did not finish")


def peak_rss_mib(args: list[str]) -> float:
    """The command's peak resident set size (``VmHWM``, read from /proc while it runs)."""
    proc = subprocess.Popen([sys.executable, "-m", "acp_proxy", *args], stdout=subprocess.DEVNULL)
    peak = 0
    while proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]))
        except OSError:
            pass
        time.sleep(0.05)
    if proc.returncode != 0:
        raise SystemExit(f"{args} failed with {proc.returncode}")
    return peak / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--frames", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=300)
    ap.add_argument("--db", type=Path, help="Use this recorded database (one capture).")
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = opts.db or Path(tmp) / "big.sqlite"
        if opts.db is None:
            record(db, opts.frames, opts.size)
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, db {db}")
        for name, args in COMMANDS.items():
            t = time.monotonic()
            rss = peak_rss_mib([*args, "--db", str(db)])
            print(f"{name:<14} peak RSS {rss:8.1f} MiB  ({time.monotonic() - t:.1f} s)")


if __name__ == "__main__":
    main()

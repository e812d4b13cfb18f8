"""Every performance target in one table: stdio, WebSocket, reading large captures.

Each figure is measured in this run, beside the direct pipe or the direct WebSocket where
there is one (the limit). ``--quick`` takes about three minutes with smaller counts (the
reading rows are then measured on 200 000 frames, so their verdict is indicative only);
the full run takes ten to fifteen.

    python bench/run.py --quick
    python bench/run.py

The figures of record are in docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_read  # noqa: E402
import bench_stdio  # noqa: E402
import bench_ws  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller counts: about three minutes")
    ap.add_argument("--only", choices=["stdio", "ws", "read"], action="append")
    a = ap.parse_args()
    commit = subprocess.run(
        ["git", "-C", str(HERE.parent), "rev-parse", "--short", "HEAD"],
        capture_output=True, text=True, check=False,
    ).stdout.strip()  # fmt: skip
    print(
        f"commit {commit or '?'}  python {platform.python_version()}  cpus {os.cpu_count()}  "
        f"sqlite {sqlite3.sqlite_version}  {'quick' if a.quick else 'full'} run"
    )
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    parts = a.only or ["stdio", "ws", "read"]
    rows: list[bench_stdio.Row] = []
    failures: list[str] = []
    if "stdio" in parts:
        stdio_rows, failures = bench_stdio.measure(a.quick)
        rows += stdio_rows
    if "ws" in parts:
        rows += bench_ws.measure(a.quick)
    if "read" in parts:
        rows += bench_read.measure(a.quick)
    bench_stdio.print_rows(rows)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    met = sum(1 for r in rows if r.ok)
    judged = sum(1 for r in rows if r.ok is not None)
    print(f"targets met: {met} of {judged}")
    for f in failures:
        print(f"FAILED CHECK: {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

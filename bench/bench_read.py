"""Benchmark of reading a large capture back: the views and ``show`` on a 1 000 000-frame
capture in a real database.

The capture is the synthetic v1 + v2 session of ``bench_reconstruct.py``, recorded through
the real recorder (a :class:`RecorderLink`, the journal and the recorder process, as
``acp-proxy record`` does). Then each command runs as a user runs it, in its own process,
with its output read through a pipe:

- ``tools --json``, ``terminals --json``, ``diffs --json``: wall time to exit, peak RSS
  (the median time and the largest peak of ``--runs`` runs);
- ``show``: the time until its first line is on the pipe, and to the end.

With ``--against REV``, the same commands also run from the code of git revision ``REV``
(extracted to a temporary directory), one after the other in the same run, so the two can
be compared on a shared, noisy machine.

    python bench/bench_read.py              # 1 000 000 frames
    python bench/bench_read.py --frames 100000
    python bench/bench_read.py --db PATH    # reuse a database built before
    python bench/bench_read.py --db PATH --against HEAD~3 --runs 3

Figures and the machine they came from are in docs/performance.md ("Reading").
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_reconstruct import build  # noqa: E402
from bench_stdio import Row, recorders  # noqa: E402

from acp_proxy.protocol.frames import Direction  # noqa: E402
from acp_proxy.record.link import CaptureMeta, RecorderLink  # noqa: E402
from acp_proxy.record.tap import Tap  # noqa: E402

PROXY = [sys.executable, "-m", "acp_proxy"]


def record(db: Path, frames: int) -> float:
    """Record ``frames`` synthetic frames into ``db``; returns the seconds it took."""
    built = build(frames)
    t0 = time.perf_counter()
    link = RecorderLink(db)
    tap = link.open_capture(CaptureMeta(transport="stdio", agent_command=["bench-agent"]))
    run: list[bytes] = []
    direction = built[0].direction
    for frame in built:  # consecutive frames of one direction go as one chunk, as a pipe
        if frame.direction is not direction or len(run) >= 256:
            tap.chunk(direction, b"".join(run))
            run, direction = [], frame.direction
        run.append(frame.raw + b"\n")
    tap.chunk(direction, b"".join(run))
    finish_recording(link, tap, db)
    return time.perf_counter() - t0


def finish_recording(link: RecorderLink, tap: Tap, db: Path) -> None:
    """End the capture ``tap`` records as a relay ends one (both streams, then the close),
    and wait until its recorder has stored all of it and exited."""
    for d in Direction:
        tap.end_stream(d)
    tap.close(exit_code=0)
    link.close(wait=600)
    while recorders(db):
        time.sleep(0.05)


def rows(db: Path) -> int:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return int(con.execute("SELECT COUNT(*) FROM messages").fetchone()[0])
    finally:
        con.close()


def run_view(db: Path, *args: str, code: Path = ROOT) -> tuple[float, float, int]:
    """(seconds to exit, peak RSS in MiB, bytes of output) of one command, run from the
    package in ``code`` (``python -m`` imports it from the working directory)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        ["/usr/bin/time", "-f", "%M", *PROXY, *args, "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=code,
    )
    out, err = proc.communicate()
    took = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {err.decode(errors='replace')[-500:]}")
    peak_kb = int(err.decode().strip().splitlines()[-1])
    return took, peak_kb / 1024, len(out)


def first_line(db: Path, *args: str) -> tuple[float, float, float]:
    """(seconds to the first line on the pipe, seconds to exit, peak RSS MiB)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        ["/usr/bin/time", "-f", "%M", *PROXY, *args, "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    first = time.perf_counter() - t0
    while proc.stdout.read(1 << 20):
        pass
    err = proc.stderr.read()
    proc.wait()
    took = time.perf_counter() - t0
    peak_kb = int(err.decode().strip().splitlines()[-1])
    return first, took, peak_kb / 1024


def measure(quick: bool) -> list[Row]:
    """The rows of the performance table this benchmark answers for."""
    frames = 200_000 if quick else 1_000_000
    db = Path(tempfile.mkdtemp(prefix="bench-read-")) / "read.sqlite"
    record(db, frames)
    rows = []
    for view in ("tools", "terminals", "diffs"):
        took, peak, _ = run_view(db, view, "--json")
        rows.append(
            Row(f"{view} --json, {frames:,} frames: s, peak RSS", "",
                f"{took:.2f} s, {peak:.0f} MiB", "<= 3 s, <= 150 MB (1 M frames)",
                took <= 3 and peak <= 143)
        )  # fmt: skip
    first, _, _ = first_line(db, "show")
    rows.append(
        Row(f"show, {frames:,} frames: first line on the pipe", "", f"{first:.2f} s", "<= 0.5 s",
            first <= 0.5)
    )  # fmt: skip
    shutil.rmtree(db.parent, ignore_errors=True)
    return rows


def runs(db: Path, view: str, n: int, code: Path = ROOT) -> tuple[float, float, int]:
    """The median seconds, the largest peak RSS and the output size of ``n`` runs."""
    done = [run_view(db, view, "--json", code=code) for _ in range(n)]
    return statistics.median(t for t, _, _ in done), max(p for _, p, _ in done), done[-1][2]


def checkout(rev: str, into: Path) -> Path:
    """The tree of git revision ``rev``, extracted under ``into``."""
    tree = into / "tree"
    tree.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=1_000_000)
    ap.add_argument("--db", type=Path, help="a database built by an earlier run")
    ap.add_argument("--runs", type=int, default=1, help="runs of each view (median time)")
    ap.add_argument("--against", metavar="REV", help="also run the views of git revision REV")
    args = ap.parse_args()
    print(
        f"python {platform.python_version()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"
    )
    if args.db is None:
        tmp = Path(tempfile.mkdtemp(prefix="bench-read-"))
        db = tmp / "read.sqlite"
        took = record(db, args.frames)
        print(f"recorded {args.frames:,} frames in {took:.1f} s ({args.frames / took:,.0f}/s)")
    else:
        db = args.db
    n = rows(db)
    print(f"database: {n:,} frames, {db.stat().st_size / 1e6:,.0f} MB\n")
    codes = [("", ROOT)]
    if args.against:
        codes.append((args.against, checkout(args.against, Path(tempfile.mkdtemp()))))
    print(f"  {'command':<30} {'seconds':>8} {'peak RSS':>10} {'output':>10}")
    for view in ("tools", "terminals", "diffs"):
        for rev, code in codes:
            took, peak, size = runs(db, view, args.runs, code)
            name = f"{view} --json" + (f" ({rev})" if rev else "")
            print(f"  {name:<30} {took:>8.2f} {peak:>7.0f} MiB {size / 1e6:>7.1f} MB")
    for _, code in codes[1:]:
        shutil.rmtree(code.parent, ignore_errors=True)
    first, took, peak = first_line(db, "show")
    print(f"  {'show':<30} {took:>8.2f} {peak:>7.0f} MiB   first line after {first:.2f} s")


if __name__ == "__main__":
    main()

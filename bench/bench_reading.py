"""Benchmark of reading at scale: every view as text and as JSON, ``show --grep``, the first
``search``, and the recorder's catch-up, beside a bare parse of the same rows, in one run.

The capture is the synthetic v1 + v2 session of ``bench_reconstruct.py`` (1 000 000 frames by
default), recorded once through the real recorder and kept in the system's temporary
directory for the next runs. Then, each command run as a user runs it (its own process,
output read through a pipe), the median of ``--runs``:

- the limit: a bare parse of the rows (every stored frame read in ``seq`` order and parsed
  with ``orjson``, in this process);
- ``tools``, ``terminals``, ``diffs`` and ``show --view turns|permissions``, as text and
  ``--json`` (target: text within 1.5 x its JSON; turns within 4 x a bare parse);
- ``show --grep`` with a pattern nothing matches (target: within 4 x a bare parse);
- ``check``, as text and as JSON, with its peak memory: the capture is a v1 and a v2
  session in one, so nearly every frame is a finding (the text report keeps the first 20
  of each rule, the JSON report every one);
- ``search`` on a fresh copy of the database, nothing indexed yet (the first query);
- the recorder's catch-up: ``--catch-up N`` frames of 200 bytes (``session/update`` message
  chunks) handed to the recorder at once, and the rate it stores them at.

With ``--against REV`` the commands also run from the code of git revision ``REV`` (extracted
to a temporary directory), one after the other, on the same database.

    python bench/bench_reading.py
    python bench/bench_reading.py --frames 200000 --runs 3 --against HEAD~4
    python bench/bench_reading.py --no-search --catch-up 0

Figures and the machine they came from are in docs/performance.md ("Reading at scale").
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import NamedTuple

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_read import checkout, record  # noqa: E402
from bench_stdio import recorders  # noqa: E402

from acp_proxy.protocol.frames import Direction  # noqa: E402
from acp_proxy.record.link import CaptureMeta, RecorderLink  # noqa: E402

PROXY = [sys.executable, "-m", "acp_proxy"]
VIEWS = (
    ("tools", ["tools"]),
    ("terminals", ["terminals"]),
    ("diffs", ["diffs"]),
    ("turns", ["show", "--view", "turns"]),
    ("permissions", ["show", "--view", "permissions"]),
)


def cached_capture(frames: int) -> Path:
    """The database of ``frames`` synthetic frames, recorded on the first run and kept."""
    db = Path(tempfile.gettempdir()) / f"acp-proxy-bench-reading-{frames}.sqlite"
    if not db.exists():
        building = db.with_suffix(".building")
        shutil.rmtree(building, ignore_errors=True)
        building.mkdir()
        took = record(building / "read.sqlite", frames)
        print(f"recorded {frames:,} frames in {took:.1f} s ({frames / took:,.0f}/s), kept as {db}")
        os.replace(building / "read.sqlite", db)
        shutil.rmtree(building, ignore_errors=True)
    return db


def bare_parse(db: Path) -> tuple[float, float]:
    """Seconds (wall, CPU) to read every stored frame in ``seq`` order and parse it: the
    limit."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        loads = orjson.loads
        for (raw,) in conn.execute("SELECT raw FROM messages ORDER BY capture_id, seq"):
            with contextlib.suppress(orjson.JSONDecodeError):
                loads(raw)
        return time.perf_counter() - t0, time.process_time() - c0
    finally:
        conn.close()


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed(db: Path, args: list[str], code: Path = ROOT) -> tuple[float, float]:
    """Seconds ``acp-proxy ARGS --db DB`` takes to exit, its output read through a pipe,
    and the CPU seconds it used (steadier than the wall clock on a shared machine)."""
    t0, c0 = time.perf_counter(), _cpu()
    proc = subprocess.run([*PROXY, *args, "--db", str(db)], cwd=code, capture_output=True)
    took, cpu = time.perf_counter() - t0, _cpu() - c0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(args)}: {proc.stderr.decode(errors='replace')[-500:]}")
    return took, cpu


def median(db: Path, args: list[str], runs: int, code: Path = ROOT) -> tuple[float, float]:
    done = [timed(db, args, code) for _ in range(runs)]
    return statistics.median(w for w, _ in done), statistics.median(c for _, c in done)


def peak(db: Path, args: list[str], code: Path = ROOT) -> tuple[float, float]:
    """(seconds to exit, peak RSS in MiB) of ``acp-proxy ARGS --db DB``, whose status may
    be 1 (``check`` with findings)."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        ["/usr/bin/time", "-f", "%M", *PROXY, *args, "--db", str(db)],
        cwd=code,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    took = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(args)}: {proc.stderr.decode(errors='replace')[-500:]}")
    return took, int(proc.stderr.decode().strip().splitlines()[-1]) / 1024


def first_search(db: Path, code: Path = ROOT) -> float:
    """Seconds of the first ``search`` of a copy of ``db`` nothing has indexed yet."""
    with tempfile.TemporaryDirectory(prefix="bench-search-") as tmp:
        copy = Path(tmp) / "copy.sqlite"
        src = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        dst = sqlite3.connect(copy)
        src.backup(dst)
        src.close()
        dst.close()
        os.chmod(copy, 0o600)
        return timed(copy, ["search", "needle-nowhere"], code)[0]


def _proc_cpu(pid: int) -> float | None:
    """CPU seconds process ``pid`` has used so far (None once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    if fields[0] in ("Z", "X"):  # exited, not yet reaped
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CatchUp(NamedTuple):
    """What :func:`catch_up` measured."""

    stored: float  # frames a second until the last one was committed
    exited: float  # frames a second until the recorder exited (it waits for the index)
    cpu: float  # the recorder's CPU seconds
    search: float | None  # the first search of what it recorded
    left: int  # frames it left for that search to index


def catch_up(frames: int, code: Path = ROOT) -> CatchUp:
    """The recorder storing ``frames`` 200-byte message chunks handed to it at once (a
    flood it catches up with): frames a second until the last was committed and until it
    exited (at its end it waits, at most two seconds, for the search index to reach its
    last rows), its CPU seconds, then the seconds of the first ``search`` of what it
    recorded, and how many rows it left for that search to index."""
    line = (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
        b'{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"'
    )
    pad = 200 - len(line) - len(b'"}}}}')
    chunk = line + b"x" * pad + b'"}}}}\n'
    assert len(chunk) == 201
    with tempfile.TemporaryDirectory(prefix="bench-catch-up-") as tmp:
        db = Path(tmp) / "c.sqlite"
        link = RecorderLink(db)
        tap = link.open_capture(CaptureMeta(transport="stdio", agent_command=["bench-agent"]))
        tap.chunk(Direction.AGENT_TO_CLIENT, chunk)  # the recorder is started and ready
        time.sleep(1)
        (pid,) = recorders(db)
        cpu0 = _proc_cpu(pid) or 0.0
        last = [cpu0]

        def sample() -> None:  # the recorder's CPU seconds until it is gone
            while (now := _proc_cpu(pid)) is not None:
                last[0] = now
                time.sleep(0.005)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        block = chunk * 256
        total = 1 + frames // 256 * 256
        stored = [0.0]

        def watch() -> None:  # when the last frame is committed
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            try:
                while (conn.execute("SELECT MAX(id) FROM messages").fetchone()[0] or 0) < total:
                    time.sleep(0.01)
            finally:
                conn.close()
            stored[0] = time.perf_counter()

        watcher = threading.Thread(target=watch, daemon=True)
        t0 = time.perf_counter()
        watcher.start()
        for _ in range(frames // 256):
            tap.chunk(Direction.AGENT_TO_CLIENT, block)
        for d in Direction:
            tap.end_stream(d)
        tap.close(exit_code=0)
        link.close(wait=600)
        sampler.join()
        watcher.join()
        cpu = last[0]
        took = time.perf_counter() - t0
        left = _unindexed(db)
        search: float | None = None
        if code is not None:
            os.chmod(db, 0o600)
            search = timed(db, ["search", "needle-nowhere"], code)[0]
    n = frames // 256 * 256
    return CatchUp(n / (stored[0] - t0), n / took, cpu - cpu0, search, left)


def _unindexed(db: Path) -> int:
    """Frames of ``db`` its index file does not cover yet (all of them without one)."""
    conn = sqlite3.connect(db)
    try:
        (total,) = conn.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()
        index = db.with_name(db.name + ".search")
        if not index.exists():
            return int(total)
        conn.execute("ATTACH DATABASE ? AS search", [str(index)])
        row = conn.execute("SELECT upto FROM search.search_index WHERE name = 'frames'")
        return int(total) - int(row.fetchone()[0])
    finally:
        conn.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=1_000_000)
    ap.add_argument("--db", type=Path, help="a database built by an earlier run")
    ap.add_argument("--runs", type=int, default=1, help="runs of each command (median)")
    ap.add_argument("--against", metavar="REV", help="also run the code of git revision REV")
    ap.add_argument("--no-search", action="store_true", help="leave out the first search")
    ap.add_argument("--catch-up", type=int, default=1_000_000, metavar="N",
                    help="frames of the catch-up run (0: none)")  # fmt: skip
    a = ap.parse_args()
    print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")  # fmt: skip
    db = a.db or cached_capture(a.frames)
    codes = [("HEAD", ROOT)]
    if a.against:
        codes.append((a.against, checkout(a.against, Path(tempfile.mkdtemp()))))
    try:
        parses = [bare_parse(db) for _ in range(a.runs)]
        bare = statistics.median(w for w, _ in parses)
        bare_cpu = statistics.median(c for _, c in parses)
        print(f"bare parse of the rows: {bare:.2f} s ({bare_cpu:.2f} cpu)\n")
        print(f"  {'command':<34}" + "".join(f"{rev[:12]:>23}" for rev, _ in codes))

        def row(label: str, args: list[str]) -> list[tuple[float, float]]:
            got = [median(db, args, a.runs, code) for _, code in codes]
            print(f"  {label:<34}" + "".join(f"{w:>8.2f} s ({c:5.2f} cpu)" for w, c in got))
            return got

        for name, args in VIEWS:
            text = row(f"{name} (text)", args)
            js = row(f"{name} --json", [*args, "--json"])
            ratios = "  ".join(
                f"{t[0] / j[0]:.2f}x ({t[1] / j[1]:.2f}x cpu)"
                for t, j in zip(text, js, strict=True)
            )
            bare_x = "  ".join(f"{w / bare:.2f}x ({c / bare_cpu:.2f}x cpu)" for w, c in text)
            print(f"  {'':<34}text/json {ratios}; text/bare parse {bare_x}")
        grep = row("show --grep (no match)", ["show", "--grep", "needle-nowhere"])
        grep_x = "  ".join(f"{w / bare:.2f}x ({c / bare_cpu:.2f}x cpu)" for w, c in grep)
        print(f"  {'':<34}/bare parse {grep_x}")
        for label, args in (
            ("check (text)", ["check"]),
            ("check --format json", ["check", "--format", "json"]),
        ):
            got = [peak(db, args, code) for _, code in codes]
            print(f"  {label:<34}" + "".join(f"{w:>8.2f} s {m:7.0f} MiB" for w, m in got))
        if not a.no_search:
            for rev, code in codes:
                print(f"  first search, never indexed ({rev[:12]}): {first_search(db, code):.2f} s")
    finally:
        for _, code in codes[1:]:
            shutil.rmtree(code.parent, ignore_errors=True)
    if a.catch_up:
        c = catch_up(a.catch_up)
        print(
            f"  recorder catch-up, {a.catch_up:,} frames of 200 B: {c.stored:,.0f} frames/s "
            f"to the last commit, {c.exited:,.0f} to its exit ({c.cpu:.2f} cpu s, "
            f"{a.catch_up / c.cpu:,.0f} frames a cpu second)"
        )
        print(f"  first search of that capture: {c.search:.2f} s "
              f"({c.left:,} frames left unindexed by the recorder)")  # fmt: skip
    print(f"load at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()

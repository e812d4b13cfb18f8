"""Benchmark of the stdio relay and recorder: the same agent, directly and through the proxy.

Every figure is measured in the same run against the agent alone writing into a pipe (the
limit). A proxied run is followed until its recorder process has written the last frame
(``recorded``), not only until the reader had the bytes (``forwarded``); afterwards the
database is checked to hold exactly the frames sent (count, bytes, gap-free ``seq``, kinds).

    python bench/bench_stdio.py            # full run, a few minutes
    python bench/bench_stdio.py --quick    # about a minute

Figures, and the machine they came from, are in docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from flood_agent import notification  # noqa: E402

from acp_proxy.store.db import PAGE_SIZE  # noqa: E402

AGENT = HERE / "flood_agent.py"
PY = sys.executable
MB = 1_000_000
MIB = 1 << 20

__all__ = ["Row", "measure"]


@dataclass
class Row:
    metric: str
    direct: str
    proxied: str
    target: str = ""
    ok: bool | None = None


def proxy_command() -> list[str]:
    return [PY, "-m", "acp_proxy"]


# -- processes ---------------------------------------------------------------------------------


def _status_kb(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def recorders(db: Path) -> list[int]:
    """Recorder processes writing ``db``."""
    out = []
    for entry in Path("/proc").iterdir():
        try:
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"acp_proxy.record.child" in cmd and str(db).encode() in cmd:
            out.append(int(entry.name))
    return out


class MemPoll(threading.Thread):
    """Peak resident memory (VmHWM) of the proxy and of its recorder process."""

    def __init__(self, pid: int, db: Path, every: float = 0.01) -> None:
        super().__init__(daemon=True)
        self.pid, self.db, self.every = pid, db, every
        self.hwm: dict[int, int] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        known: set[int] = set()
        while not self.stop.is_set():
            if not known - {self.pid}:
                known.update(recorders(self.db))
            for pid in {self.pid, *known}:
                kb = _status_kb(pid, "VmHWM:")
                if kb:
                    self.hwm[pid] = max(self.hwm.get(pid, 0), kb)
            self.stop.wait(self.every)

    def mib(self) -> tuple[float, float]:
        """(proxy, recorder) peaks in MiB."""
        proxy = self.hwm.get(self.pid, 0) / 1024
        return proxy, sum(v for k, v in self.hwm.items() if k != self.pid) / 1024


@dataclass
class Run:
    count: int
    size: int
    t_first: float = 0.0
    t_eof: float = 0.0  # the reader had every byte
    t_recorded: float = 0.0  # the recorder process had written the last frame
    nbytes: int = 0
    mem: tuple[float, float] = (0.0, 0.0)
    notes: list[str] = field(default_factory=list)

    def rate(self, until: str) -> float:
        end = {"eof": self.t_eof, "recorded": self.t_recorded}[until]
        return self.count / max(end - self.t_first, 1e-9)


def run_flood(argv: list[str], count: int, size: int, db: Path | None, mem: bool) -> Run:
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    poll = MemPoll(p.pid, db) if (mem and db is not None) else None
    if poll:
        poll.start()
    assert p.stdout is not None and p.stdin is not None
    fd = p.stdout.fileno()
    r = Run(count, size)
    data = os.read(fd, MIB)
    r.t_first = time.perf_counter() - t0
    while data:
        r.nbytes += len(data)
        data = os.read(fd, MIB)
    r.t_eof = time.perf_counter() - t0
    p.stdin.close()
    p.wait()
    if db is not None:
        while recorders(db):
            time.sleep(0.002)
    r.t_recorded = time.perf_counter() - t0
    if poll:
        poll.stop.set()
        poll.join()
        r.mem = poll.mib()
    if r.nbytes != count * size:
        r.notes.append(f"read {r.nbytes} bytes, expected {count * size}")
    return r


def check_db(db: Path, count: int, size: int) -> list[str]:
    problems: list[str] = []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        (cid, mc, lost) = conn.execute(
            "SELECT id, message_count, lost_count FROM captures"
        ).fetchone()
        rows, total, lo, hi, notif = conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(size), 0), MIN(seq), MAX(seq), "
            "SUM(kind = 'notification') FROM messages WHERE capture_id = ?",
            [cid],
        ).fetchone()
    finally:
        conn.close()
    if rows != count or mc != count or lost:
        problems.append(f"database holds {rows} frames (count {mc}, lost {lost}), sent {count}")
    if total != count * (size - 1):
        problems.append(f"database holds {total} bytes of frames, sent {count * (size - 1)}")
    if count and (lo, hi) != (0, count - 1):
        problems.append(f"seq runs {lo}..{hi}, expected 0..{count - 1}")
    if count > 1 and notif != count:
        problems.append(f"{notif} frames classified notification, expected {count}")
    return problems


class Bench:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.n = 0
        self.failures: list[str] = []

    def db(self) -> Path:
        self.n += 1
        d = self.tmp / f"db{self.n}"
        d.mkdir()
        return d / "bench.sqlite"

    def flood(self, count: int, size: int, *, proxied: bool, mem: bool = False) -> Run:
        agent = [PY, str(AGENT), "flood", "--count", str(count), "--size", str(size)]
        if not proxied:
            return run_flood(agent, count, size, None, False)
        db = self.db()
        argv = [*proxy_command(), "record", "--db", str(db), "--", *agent]
        try:
            r = run_flood(argv, count, size, db, mem)
            r.notes += check_db(db, count, size)
        finally:
            shutil.rmtree(db.parent, ignore_errors=True)
        self.failures += [f"flood {count} x {size} B: {n}" for n in r.notes]
        return r

    def rtt(self, n: int, warmup: int) -> tuple[list[float], list[float]]:
        """Round trips in µs, direct and via the proxy, both agents running at once and
        asked in turn: one request at a time, each waiting for its response."""
        agent = [PY, str(AGENT), "echo"]
        db = self.db()
        procs = [
            subprocess.Popen(a, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
            for a in (agent, [*proxy_command(), "record", "--db", str(db), "--", *agent])
        ]
        times: list[list[float]] = [[], []]
        clock = time.perf_counter_ns
        try:
            for i in range(warmup + n):
                req = b'{"jsonrpc":"2.0","id":%d,"method":"_bench/ping","params":{}}\n' % i
                for k, p in enumerate(procs):
                    assert p.stdin is not None and p.stdout is not None
                    fin, fout = p.stdin.fileno(), p.stdout.fileno()
                    t = clock()
                    os.write(fin, req)
                    buf = os.read(fout, 65536)
                    while not buf.endswith(b"\n"):
                        buf += os.read(fout, 65536)
                    if i >= warmup:
                        times[k].append((clock() - t) / 1000)
        finally:
            for p in procs:
                assert p.stdin is not None
                p.stdin.close()
                p.wait()
        while recorders(db):
            time.sleep(0.01)
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        rows, paired = conn.execute("SELECT COUNT(*), COUNT(request_seq) FROM messages").fetchone()
        conn.close()
        shutil.rmtree(db.parent, ignore_errors=True)
        if rows != 2 * (warmup + n) or paired != warmup + n:
            self.failures.append(f"round trips: {rows} frames ({paired} paired)")
        return times[0], times[1]


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def sqlite_alone(count: int, size: int, tmp: Path) -> float:
    """What SQLite alone takes, in rows a second, of the same frames written the recorder's
    way (a new database's page size, WAL, transactions of 10 000 rows — the 2 MiB the
    recorder reads at a time, in 200 B frames — 50 rows a statement) into the narrowest
    table that keeps them (id, seq, bytes): no reading, cutting or classifying. A ceiling
    for any recorder that stores frames as SQLite rows."""
    raw = notification(size)[:-1]
    conn = sqlite3.connect(tmp / "alone.sqlite", isolation_level=None)
    conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("CREATE TABLE f (id INTEGER PRIMARY KEY, seq INTEGER NOT NULL, raw BLOB)")
    sql = "INSERT INTO f (seq, raw) VALUES " + ", ".join(["(?, ?)"] * 50)
    t0 = time.perf_counter()
    for start in range(0, count - count % 10_000, 10_000):
        conn.execute("BEGIN")
        conn.executemany(
            sql,
            (
                [v for i in range(j, j + 50) for v in (i, raw)]
                for j in range(start, start + 10_000, 50)
            ),
        )
        conn.execute("COMMIT")
    conn.close()
    return (count - count % 10_000) / (time.perf_counter() - t0)


def measure(quick: bool, tmpdir: str | None = None) -> tuple[list[Row], list[str]]:
    tmp = Path(tempfile.mkdtemp(prefix="acp-bench-", dir=tmpdir))
    b = Bench(tmp)
    rows: list[Row] = []
    small = 200_000 if quick else 1_000_000
    big = (256 if quick else 1024) * MIB // 4096
    n_rtt = 2_000 if quick else 10_000
    try:
        d = b.flood(small, 200, proxied=False)
        p = b.flood(small, 200, proxied=True)
        dr, fw, rec = d.rate("eof"), p.rate("eof"), p.rate("recorded")
        rows += [
            Row(f"stdio 200 B x {small:,}: recorded, msg/s", f"{dr:,.0f}", f"{rec:,.0f}",
                ">= 150,000", rec >= 150_000),
            Row("  recorded: ratio to direct", "", f"{rec / dr:.1%}", ">= 20 %", rec / dr >= 0.2),
            Row("  limit: SQLite alone, the same frames as bare rows, msg/s", "",
                f"{(alone := sqlite_alone(small, 200, tmp)):,.0f} ({alone / dr:.1%})"),
            Row("  forwarded (journaled, durable), msg/s", "", f"{fw:,.0f}"),
            Row("  forwarded: ratio to direct", "", f"{fw / dr:.1%}", ">= 20 %", fw / dr >= 0.2),
        ]  # fmt: skip
        d = b.flood(big, 4096, proxied=False)
        p = b.flood(big, 4096, proxied=True, mem=True)
        mb_d, mb_f, mb_r = (r * 4096 / MB for r in (d.rate("eof"), p.rate("eof"),
                                                    p.rate("recorded")))  # fmt: skip
        proxy_mib, rec_mib = p.mem
        rows += [
            Row(f"stdio 4 KB x {big:,}: recorded, MB/s", f"{mb_d:,.0f}", f"{mb_r:,.0f}",
                ">= 200 MB/s", mb_r >= 200),
            Row("  forwarded (journaled, durable), MB/s", "", f"{mb_f:,.0f}", ">= 200 MB/s",
                mb_f >= 200),
            Row(f"  peak RSS, proxy + recorder ({big * 4096 / 2**30:.2f} GiB flood)", "",
                f"{proxy_mib:.0f} + {rec_mib:.0f} MiB", "<= 100 MiB",
                proxy_mib + rec_mib <= 100),
        ]  # fmt: skip
        line = (25 if quick else 100) * MB
        p = b.flood(1, line, proxied=True, mem=True)
        total = sum(p.mem) * MIB
        rows.append(
            Row(f"one {line // MB} MB line: peak RSS proxy + recorder", "",
                f"{p.mem[0]:.0f} + {p.mem[1]:.0f} MiB ({total / line:.1f}x)", "<= 2.5x the line",
                total <= 2.5 * line)
        )  # fmt: skip
        rd, rp = b.rtt(n_rtt, 200)
        add_med, add_p99 = med(rp) - med(rd), pct(rp, 99) - pct(rd, 99)
        rows += [
            Row(f"round trip, {n_rtt:,} requests: median µs", f"{med(rd):,.1f}", f"{med(rp):,.1f}"),
            Row("  added by the proxy: median µs", "", f"{add_med:,.1f}", "<= 100 µs",
                add_med <= 100),
            Row("  p99 µs", f"{pct(rd, 99):,.1f}", f"{pct(rp, 99):,.1f}"),
            Row("  added by the proxy: p99 µs", "", f"{add_p99:,.1f}", "<= 500 µs", add_p99 <= 500),
        ]  # fmt: skip
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows, b.failures


def print_rows(rows: list[Row]) -> None:
    print(f"  {'':<52} {'direct':>12} {'via proxy':>24}  {'target':<18}")
    for r in rows:
        verdict = "" if r.ok is None else ("ok" if r.ok else "MISS")
        print(f"  {r.metric:<52} {r.direct:>12} {r.proxied:>24}  {r.target:<18} {verdict}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller counts: about a minute")
    ap.add_argument("--tmpdir", default=None, help="where the temporary databases go")
    a = ap.parse_args()
    print(
        f"python {sys.version.split()[0]}  cpus {os.cpu_count()}  sqlite {sqlite3.sqlite_version}"
    )
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    rows, failures = measure(a.quick, a.tmpdir)
    print_rows(rows)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for f in failures:
        print(f"FAILED CHECK: {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

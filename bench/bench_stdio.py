"""Benchmark of the stdio relay and recorder: the same agent, directly and through the proxy.

Every proxied run records into a fresh database; after it the benchmark checks that the
database holds exactly the frames sent (count, bytes, gap-free seq), and a proxied flood is
timed until the proxy *exited* (so the recorder's drain is included), not only until the
reader had the bytes. Rates are taken from the first byte read, so process start-up (measured
on its own) does not dilute them.

    /work/venv/bin/python bench/bench_stdio.py            # full run, a few minutes
    /work/venv/bin/python bench/bench_stdio.py --quick    # under a minute
    /work/venv/bin/python bench/bench_stdio.py --breakdown  # + in-process recorder stages

Figures and the machine they came from are in docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import resource
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
AGENT = HERE / "flood_agent.py"
PY = sys.executable
MB = 1_000_000


def proxy_command() -> list[str]:
    exe = Path(PY).parent / "acp-proxy"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("acp-proxy")
    if found:
        return [found]
    return [PY, "-m", "acp_proxy"]


# -- measuring a process -------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(c) for c in f.read().split()]
    except (OSError, ValueError):
        pass
    return out


def _status_kb(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


class MemPoll(threading.Thread):
    """Polls ``/proc/PID/status`` of the proxy and of its descendants that are not the agent
    (the recorder's own process, if it has one). VmHWM covers every thread of a process."""

    def __init__(self, pid: int, agent_marker: str, every: float = 0.01) -> None:
        super().__init__(daemon=True)
        self.pid, self.marker, self.every = pid, agent_marker, every
        self.hwm_kb: dict[int, int] = {}
        self.names: dict[int, str] = {}
        self.stop = threading.Event()

    def _is_agent(self, pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return True
        self.names.setdefault(pid, cmd)
        return self.marker in cmd

    def run(self) -> None:
        while not self.stop.is_set():
            pids = [self.pid]
            todo = [self.pid]
            while todo:
                for c in _children(todo.pop()):
                    if not self._is_agent(c):
                        pids.append(c)
                        todo.append(c)
            for pid in pids:
                kb = _status_kb(pid, "VmHWM:")
                if kb:
                    self.hwm_kb[pid] = max(self.hwm_kb.get(pid, 0), kb)
            if not os.path.exists(f"/proc/{self.pid}"):
                return
            self.stop.wait(self.every)


@dataclass
class Run:
    count: int
    size: int
    t_first: float  # seconds from spawn
    t_eof: float
    t_exit: float
    nbytes: int
    maxrss_kb: int = 0  # from wait4: the process (and the agent it reaped)
    hwm_kb: int = 0  # polled VmHWM of the process itself
    hwm_others_kb: int = 0  # polled VmHWM of its other processes (not the agent), summed
    cpu_s: float = 0.0  # user + system CPU from wait4 (the process and the agent it reaped)
    db_frames: int | None = None
    notes: list[str] = field(default_factory=list)

    def rate(self, until: str = "exit") -> float:
        end = self.t_exit if until == "exit" else self.t_eof
        return self.count / max(end - self.t_first, 1e-9)


def run_flood(
    argv: list[str],
    count: int,
    size: int,
    *,
    poll_mem: bool = False,
    env: dict[str, str] | None = None,
) -> Run:
    """Spawn ``argv``, read its stdout through a pipe to EOF, then wait for it to exit.

    Our end of its stdin stays open until its stdout ends (a closed stdin would make the
    proxy start its shutdown grace period)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0, env=env)
    poll = MemPoll(p.pid, str(AGENT)) if poll_mem else None
    if poll:
        poll.start()
    assert p.stdout is not None and p.stdin is not None
    fd = p.stdout.fileno()
    n = 0
    t_first = 0.0
    data = os.read(fd, 1 << 20)
    if data:
        t_first = time.perf_counter() - t0
    read = os.read
    while data:
        n += len(data)
        data = read(fd, 1 << 20)
    t_eof = time.perf_counter() - t0
    p.stdin.close()
    _, status, ru = os.wait4(p.pid, 0)
    t_exit = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if poll:
        poll.stop.set()
        poll.join()
    r = Run(count, size, t_first, t_eof, t_exit, n, maxrss_kb=ru.ru_maxrss)
    r.cpu_s = ru.ru_utime + ru.ru_stime
    if poll:
        r.hwm_kb = poll.hwm_kb.get(p.pid, 0)
        r.hwm_others_kb = sum(v for k, v in poll.hwm_kb.items() if k != p.pid)
    if n != count * size:
        r.notes.append(f"read {n} bytes, expected {count * size}")
    if p.returncode != 0:
        r.notes.append(f"exit status {p.returncode}")
    return r


def check_db(db: Path, count: int, size: int) -> tuple[int, list[str]]:
    """Frames recorded; problems found (count, bytes, gap-free seq, message_count)."""
    problems: list[str] = []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        (cid, mc) = conn.execute("SELECT id, message_count FROM captures").fetchone()
        rows, total, lo, hi, notif = conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(size), 0), MIN(seq), MAX(seq), "
            "SUM(kind = 'notification') FROM messages WHERE capture_id = ?",
            [cid],
        ).fetchone()
    finally:
        conn.close()
    if rows != count:
        problems.append(f"database holds {rows} frames, expected {count}")
    if total != count * (size - 1):
        problems.append(f"database holds {total} bytes of frames, expected {count * (size - 1)}")
    if count and (lo, hi) != (0, count - 1):
        problems.append(f"seq runs {lo}..{hi}, expected 0..{count - 1}")
    if notif != count:
        problems.append(f"{notif} frames classified notification, expected {count}")
    if mc != count:
        problems.append(f"captures.message_count = {mc}, expected {count}")
    return rows, problems


class Bench:
    def __init__(self, tmp: Path, proxy: list[str], env: dict[str, str] | None) -> None:
        self.tmp = tmp
        self.proxy = proxy
        self.env = env
        self.n_db = 0
        self.failures: list[str] = []

    def fresh_db(self) -> Path:
        self.n_db += 1
        d = self.tmp / f"db{self.n_db}"
        d.mkdir()
        return d / "bench.sqlite"

    def drop_db(self, db: Path) -> None:
        shutil.rmtree(db.parent, ignore_errors=True)

    def agent(self, *args: str) -> list[str]:
        return [PY, str(AGENT), *args]

    def via_proxy(self, db: Path, agent: list[str]) -> list[str]:
        return [*self.proxy, "record", "--db", str(db), "--label", "bench", "--", *agent]

    def flood(self, count: int, size: int, *, proxied: bool, poll_mem: bool = False) -> Run:
        agent = self.agent("flood", "--count", str(count), "--size", str(size))
        if not proxied:
            return run_flood(agent, count, size)
        db = self.fresh_db()
        try:
            r = run_flood(self.via_proxy(db, agent), count, size, poll_mem=poll_mem, env=self.env)
            r.db_frames, problems = check_db(db, count, size)
            r.notes += problems
        finally:
            self.drop_db(db)
        for note in r.notes:
            self.failures.append(f"flood {count}x{size}B via proxy: {note}")
        return r

    def pair(self, count: int, size: int, repeat: int) -> tuple[list[Run], list[Run]]:
        """Direct and proxied runs interleaved, so both see the same machine state."""
        direct, proxied = [], []
        for _ in range(repeat):
            direct.append(self.flood(count, size, proxied=False))
            proxied.append(self.flood(count, size, proxied=True))
        return direct, proxied

    def rtt(self, n: int, warmup: int) -> tuple[list[float], list[float]]:
        """Round trips in µs, direct and via the proxy, both agents running at once and
        asked in turn (so both see the same machine state): one request at a time, each
        waiting for its response."""
        agent = self.agent("echo")
        db = self.fresh_db()
        procs = [
            subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0, env=self.env
            )
            for argv in (agent, self.via_proxy(db, agent))
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
                        more = os.read(fout, 65536)
                        if not more:
                            raise RuntimeError("agent closed its stdout")
                        buf += more
                    dt = clock() - t
                    if i >= warmup:
                        times[k].append(dt / 1000)
        finally:
            for p in procs:
                assert p.stdin is not None
                p.stdin.close()
                p.wait()
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        rows, paired = conn.execute("SELECT COUNT(*), COUNT(request_seq) FROM messages").fetchone()
        conn.close()
        self.drop_db(db)
        want = 2 * (warmup + n)
        if rows != want or paired != want // 2:
            self.failures.append(
                f"round trips via proxy: {rows} frames ({paired} paired), expected {want}"
            )
        return times[0], times[1]

    def startup(self, runs: int, proxied: bool) -> list[float]:
        """ms from spawn to the first byte on stdout; agent: /bin/echo of one frame."""
        line = '{"jsonrpc":"2.0","method":"_bench/hello"}'
        agent = ["/bin/echo", line]
        out = []
        db = self.fresh_db() if proxied else None
        for _ in range(runs):
            argv = self.via_proxy(db, agent) if db else agent
            t0 = time.perf_counter()
            p = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0, env=self.env
            )
            assert p.stdout is not None and p.stdin is not None
            first = os.read(p.stdout.fileno(), 65536)
            out.append((time.perf_counter() - t0) * 1000)
            if not first:
                self.failures.append("startup: no byte forwarded")
            p.stdout.read()
            p.stdin.close()
            p.wait()
        if db is not None:
            self.drop_db(db)
        return out


# -- in-process recorder (no relay, no pipes) ----------------------------------------------


def chunks_of(count: int, size: int, chunk: int = 65536) -> list[bytes]:
    sys.path.insert(0, str(HERE))
    from flood_agent import notification

    distinct = [notification(size, i) for i in range(16)]
    data = b"".join(distinct[i % 16] for i in range(count))
    return [data[i : i + chunk] for i in range(0, len(data), chunk)]


def recorder_inprocess(tmp: Path, count: int, size: int) -> tuple[float, float]:
    """Frames/s of the recorder alone, and CPU µs per frame (this process and the recorder
    process it may start):
    chunks (as 64 KiB pipe reads) put on its queue from this thread; timed until
    ``Writer.close`` returns (every frame committed). CPU time is what other load on the
    machine disturbs least."""
    from acp_proxy.protocol.frames import Direction
    from acp_proxy.record.writer import CaptureMeta, Writer

    chunks = chunks_of(count, size)
    d = Path(tempfile.mkdtemp(dir=tmp))
    db = d / "inproc.sqlite"
    try:
        w = Writer(db)
        ch0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0, c0 = time.perf_counter(), time.process_time()
        tap = w.open_capture(CaptureMeta(agent_command=["inproc"]))
        for c in chunks:
            tap.chunk(Direction.AGENT_TO_CLIENT, c)
        tap.close()
        w.close(timeout=None)
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        ch1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu += ch1.ru_utime - ch0.ru_utime + ch1.ru_stime - ch0.ru_stime
        n, _ = check_db(db, count, size)
        if n != count:
            raise RuntimeError(f"in-process recorder wrote {n} of {count} frames")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return count / dt, cpu / count * 1e6


def breakdown(tmp: Path, count: int, size: int) -> list[tuple[str, float]]:
    """µs per frame of each recorder stage, run one after another on this thread.

    Uses the recorder's internals (the stages are not public API), so it may need
    updating when they change."""
    from acp_proxy.protocol.frames import Direction
    from acp_proxy.protocol.framing import LineFramer
    from acp_proxy.protocol.jsonrpc import classify
    from acp_proxy.record.writer import CaptureMeta, Writer, _Batch, _ByteQueue

    chunks = chunks_of(count, size)
    a2c = Direction.AGENT_TO_CLIENT
    clock = time.thread_time  # CPU time of this thread: other load disturbs it least
    out: list[tuple[str, float]] = []

    def per_frame(label: str, seconds: float) -> None:
        out.append((label, seconds / count * 1e6))

    t = clock()
    q = _ByteQueue(1 << 40)
    for c in chunks:
        q.put(("chunk", None, a2c, 0, c), len(c))
    q.get_all(0)
    per_frame("queue put + get (uncontended)", clock() - t)

    t = clock()
    framer = LineFramer()
    pieces = [p for c in chunks for p in framer.feed(c)]
    per_frame("framing (LineFramer.feed)", clock() - t)
    raws = [p.raw for p in pieces]

    t = clock()
    for r in raws:
        classify(r)
    per_frame("classify (jsonrpc.classify)", clock() - t)

    import orjson

    t = clock()
    for r in raws:
        orjson.loads(r)
    per_frame("  of which orjson.loads", clock() - t)

    t = clock()
    for r in raws:
        orjson.dumps(orjson.loads(r)) != r  # noqa: B015 - classify's exactness check
    per_frame("  of which orjson.loads + dumps + compare", clock() - t)

    import pickle

    d = Path(tempfile.mkdtemp(dir=tmp))
    try:
        w = Writer(d / "stages.sqlite", in_process=True)
        tap = w.open_capture(CaptureMeta(agent_command=["stages"]))
        w.close(timeout=None)  # the thread is gone; drive the stages by hand
        from acp_proxy.record.sink import SqliteSink

        sink = SqliteSink(d / "stages.sqlite")
        sink._ids[tap.meta.uid] = sink._conn.execute("SELECT MAX(id) FROM captures").fetchone()[0]
        tap.framers.clear()
        pending: list[_Batch] = []
        b = _Batch()
        t = clock()
        for c in chunks:
            w._process(("chunk", tap, a2c, 0, c), b)
            if b.rows >= 10_000:
                pending.append(b)
                b = _Batch()
        pending.append(b)
        per_frame("_process: framing+classify+pairing+row tuple", clock() - t)
        batches = []

        class Grab:
            def write(self, batch: object) -> None:
                batches.append(batch)

        w._child, w._sink = None, Grab()
        t = clock()
        for b in pending:
            w._flush(b)
        per_frame("_flush: Batch for the sink", clock() - t)
        t = clock()
        payloads = [pickle.dumps(x, protocol=5) for x in batches]
        per_frame("pickle.dumps (recorder side of the pipe)", clock() - t)
        t = clock()
        for x in payloads:
            pickle.loads(x)
        per_frame("pickle.loads (SQLite process side)", clock() - t)
        t = clock()
        for x in batches:
            sink.write(x)
        per_frame("SqliteSink.write: executemany + commit (WAL)", clock() - t)
        sink.close()
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return out


# -- report --------------------------------------------------------------------------------


def in_process(tmp: Path, n: int, *, breakdown_too: bool) -> None:
    modes = [("as configured", None), ("ACP_PROXY_RECORDER=thread", "thread")]
    for label, mode in modes:
        print(f"\nrecorder in-process (no relay), {label}: 64 KiB chunks put on its queue")
        saved = os.environ.get("ACP_PROXY_RECORDER")
        if mode:
            os.environ["ACP_PROXY_RECORDER"] = mode
        try:
            for count in (10_000, n):
                rate, cpu = recorder_inprocess(tmp, count, 200)
                print(f"  200 B x {count:>9,}: {rate:>10,.0f} frames/s  {cpu:6.1f} CPU µs/frame")
            big = max(n // 8, 10_000)
            rate, cpu = recorder_inprocess(tmp, big, 4096)
            print(
                f"  4 KB  x {big:>9,}: {rate * 4096 / MB:>10,.0f} MB/s      {cpu:6.1f} CPU µs/frame"
            )
        finally:
            if saved is None:
                os.environ.pop("ACP_PROXY_RECORDER", None)
            else:
                os.environ["ACP_PROXY_RECORDER"] = saved
    if breakdown_too:
        print(f"\nrecorder stages, one after another, 200 B x {n:,} (CPU µs per frame)")
        try:
            for label, us in breakdown(tmp, n, 200):
                print(f"  {label:<50} {us:6.2f}")
        except (AttributeError, ImportError, TypeError) as e:
            print(f"  unavailable for this recorder version: {e!r}")


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller counts: under a minute")
    ap.add_argument("--small", type=int, help="frames in the 200-byte flood")
    ap.add_argument("--big-bytes", type=int, help="bytes in the 4 KB flood (RSS measured)")
    ap.add_argument("--repeat", type=int, help="runs of each short flood (median reported)")
    ap.add_argument("--rtt", type=int, help="round trips measured")
    ap.add_argument("--breakdown", action="store_true", help="in-process recorder stages")
    ap.add_argument(
        "--recorder-only", action="store_true", help="only the in-process recorder figures"
    )
    ap.add_argument("--tmpdir", default=None, help="where the temporary databases go")
    ap.add_argument(
        "--source",
        help="run the proxy from this source tree (e.g. a `git archive` of a commit) "
        "instead of the installed acp-proxy",
    )
    a = ap.parse_args()
    env = None
    proxy = proxy_command()
    if a.source:
        src = str(Path(a.source).resolve())
        # PYTHONSAFEPATH: `python -m` must not find the working directory's proxy/ first
        # (in the proxy nor in the recorder process it starts)
        env = {**os.environ, "PYTHONPATH": src, "PYTHONSAFEPATH": "1"}
        proxy = [PY, "-m", "acp_proxy"]
        sys.path.insert(0, src)
    q = a.quick
    small = a.small or (200_000 if q else 1_000_000)
    big_bytes = a.big_bytes or ((256 if q else 1024) * 1024 * 1024)
    repeat = a.repeat or (3 if q else 5)
    n_rtt = a.rtt or (2_000 if q else 10_000)
    big_count = big_bytes // 4096

    tmp = Path(tempfile.mkdtemp(prefix="acp-bench-", dir=a.tmpdir))
    b = Bench(tmp, proxy, env)
    import acp_proxy as package

    where = Path(package.__file__).parent.parent
    print(f"proxy: {' '.join(b.proxy)}  (source {where})")
    print(
        f"python {sys.version.split()[0]}   cpus {os.cpu_count()}   sqlite {sqlite3.sqlite_version}"
    )
    load0 = os.getloadavg()
    print(f"load average at start: {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}")
    rows: list[tuple[str, str, str, str, str]] = []

    def row(metric: str, direct: str, proxied: str, target: str, ok: bool | None) -> None:
        verdict = "" if ok is None else ("ok" if ok else "MISS")
        rows.append((metric, direct, proxied, target, verdict))
        print(f"  {metric:<46} {direct:>14} {proxied:>16}  {target:<22} {verdict}", flush=True)

    if a.recorder_only:
        try:
            in_process(tmp, 200_000 if q else 1_000_000, breakdown_too=a.breakdown)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return 0
    print(f"  {'':<46} {'direct':>14} {'via proxy':>16}  {'target':<22}")
    try:
        # 200-byte frames: growth (10k vs the big count) and throughput
        d10, p10 = b.pair(10_000, 200, repeat)
        p1 = [b.flood(1, 200, proxied=True) for _ in range(repeat)]
        dN, pN = b.pair(small, 200, 1)
        dr, pr = med([r.rate("eof") for r in dN]), med([r.rate() for r in pN])
        row(
            f"200 B x {small:,}: msg/s (to proxy exit)",
            f"{dr:,.0f}",
            f"{pr:,.0f}",
            ">= 150,000",
            pr >= 150_000,
        )
        row("  ratio to direct", "", f"{pr / dr:.1%}", ">= 20 %", pr / dr >= 0.20)
        row(
            "  MB/s",
            f"{dr * 200 / MB:,.1f}",
            f"{pr * 200 / MB:,.1f}",
            "",
            None,
        )
        row(
            "  CPU (proxy, recorder, agent) µs per frame",
            "",
            f"{med([r.cpu_s / r.count * 1e6 for r in pN]):,.1f}",
            "",
            None,
        )
        fwd = med([r.rate("eof") for r in pN])
        row("  msg/s until the reader had every byte", "", f"{fwd:,.0f}", "", None)
        r10 = med([r.rate() for r in p10])
        row(
            "200 B x 10,000: msg/s (to proxy exit)",
            f"{med([r.rate('eof') for r in d10]):,.0f}",
            f"{r10:,.0f}",
            "",
            None,
        )
        fixed = med([r.t_exit - r.t_first for r in p1])
        row("  fixed cost: 1 frame, first byte to exit", "", f"{fixed * 1000:.1f} ms", "", None)
        net10 = 10_000 / max(med([r.t_exit - r.t_first for r in p10]) - fixed, 1e-9)
        netN = small / max(med([r.t_exit - r.t_first for r in pN]) - fixed, 1e-9)
        row("  10,000 net of fixed cost: msg/s", "", f"{net10:,.0f}", "", None)
        row(f"  {small:,} net of fixed cost: msg/s", "", f"{netN:,.0f}", "", None)
        row(
            f"  rate at {small:,} vs 10,000 (raw / net)",
            "",
            f"{pr / r10:.0%} / {netN / net10:.0%}",
            ">= 90 %",
            netN / net10 >= 0.90,
        )

        # 4 KB frames, a big flood, with memory
        dB = b.flood(big_count, 4096, proxied=False)
        pB = b.flood(big_count, 4096, proxied=True, poll_mem=True)
        mbd, mbp = dB.rate("eof") * 4096 / MB, pB.rate() * 4096 / MB
        row(
            f"4 KB x {big_count:,} ({big_bytes / 2**30:.2f} GiB): MB/s",
            f"{mbd:,.0f}",
            f"{mbp:,.0f}",
            ">= 200 MB/s",
            mbp >= 200,
        )
        row("  msg/s", f"{dB.rate('eof'):,.0f}", f"{pB.rate():,.0f}", "", None)
        row(
            "  CPU (proxy, recorder, agent) µs per frame",
            "",
            f"{pB.cpu_s / pB.count * 1e6:,.1f}",
            "",
            None,
        )
        row(
            "  MB/s until the reader had every byte",
            "",
            f"{pB.rate('eof') * 4096 / MB:,.0f}",
            "",
            None,
        )
        hwm = (pB.hwm_kb + pB.hwm_others_kb) * 1024
        row("  peak RSS (VmHWM): proxy process", "", f"{pB.hwm_kb / 1024:,.1f} MiB", "", None)
        row(
            "  peak RSS: its other processes (recorder)",
            "",
            f"{pB.hwm_others_kb / 1024:,.1f} MiB",
            "",
            None,
        )
        row("  peak RSS: sum of both", "", f"{hwm / 2**20:,.1f} MiB", "<= 100 MB", hwm <= 100 * MB)
        row("  maxrss from wait4 (proxy or agent)", "", f"{pB.maxrss_kb / 1024:,.1f} MiB", "", None)

        # round trips
        rd, rp = b.rtt(n_rtt, 200)
        row(
            f"round trip, {n_rtt:,} requests: median µs",
            f"{med(rd):,.1f}",
            f"{med(rp):,.1f}",
            "",
            None,
        )
        row(
            "  added by the proxy: median µs",
            "",
            f"{med(rp) - med(rd):,.1f}",
            "<= 100 µs",
            med(rp) - med(rd) <= 100,
        )
        row("  p99 µs", f"{pct(rd, 99):,.1f}", f"{pct(rp, 99):,.1f}", "", None)
        row("  added by the proxy: p99 µs", "", f"{pct(rp, 99) - pct(rd, 99):,.1f}", "", None)

        # startup
        sd = b.startup(10, proxied=False)
        sp = b.startup(10, proxied=True)
        row(
            "startup: spawn to first byte, median ms",
            f"{med(sd):.1f}",
            f"{med(sp):.1f}",
            "<= 150 ms",
            med(sp) <= 150,
        )
        row("  max of 10 ms", f"{max(sd):.1f}", f"{max(sp):.1f}", "", None)

        if a.breakdown:
            in_process(tmp, 200_000 if q else 1_000_000, breakdown_too=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    load1 = os.getloadavg()
    print(f"\nload average at end: {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
    if b.failures:
        print("\nFAILED CHECKS:")
        for f in b.failures:
            print(f"  {f}")
        return 1
    print("\nevery proxied run: database held exactly the frames sent (count, bytes, seq)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

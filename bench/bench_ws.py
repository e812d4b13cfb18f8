"""Benchmark of the WebSocket man in the middle: direct vs through acp-proxy, same run.

Three processes on loopback: an upstream (a plain ``websockets`` server: it counts one-way
traffic, echoes round trips), ``acp-proxy ws --upstream`` recording into a fresh database,
and this load client. Reported:

- one-way throughput of small ACP messages (a ~300-byte ``session/update`` notification)
  and of 1 MiB binary messages, in messages/s and MB/s, until the upstream has them all;
  through the proxy also until every message is a row in the database;
- round-trip latency of one small message at a time (median, p99), and what the proxy adds;
- the proxy's resident memory over one long connection (``--long`` messages).

    python bench/bench_ws.py
    python bench/bench_ws.py --small 50000 --long 200000

Figures and the machine they came from are in docs/performance.md ("WebSocket").
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_stdio import Row
from websockets.asyncio.client import connect

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
RAW = {"compression": None, "max_size": None, "ping_interval": None, "max_queue": 64}
SMALL = (
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1",'
    b'"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text",'
    b'"text":"Here is the next part of the answer, streamed as a chunk of text by the '
    b'agent while it works on the prompt."}},"_meta":{"seq":%d}}}'
)

UPSTREAM = r"""
import asyncio, sys
from websockets.asyncio.server import serve
async def handler(ws):
    async for m in ws:
        if m == "count":  # one-way: count until "end", then report
            n = 0
            async for m in ws:
                if m == "end":
                    await ws.send(str(n)); break
                n += 1
        else:
            await ws.send(m)
async def main():
    async with serve(handler, "127.0.0.1", 0, compression=None, max_size=None,
                     ping_interval=None, max_queue=64) as s:
        print(s.sockets[0].getsockname()[1], flush=True)
        await asyncio.Future()
asyncio.run(main())
"""


def rss_kb(pid: int) -> int:
    """Resident memory of ``pid`` and its children (the recorder may run in a child)."""
    total = 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
        for task in Path(f"/proc/{pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                total += rss_kb(int(child))
    except OSError:
        pass
    return total


def start(db: Path) -> tuple[subprocess.Popen[str], subprocess.Popen[str], str, str]:
    """The upstream and ``acp-proxy ws`` in front of it: (upstream, proxy, direct URL,
    proxied URL). The proxy's startup lines are passed on to our stderr."""
    up = subprocess.Popen([sys.executable, "-c", UPSTREAM], stdout=subprocess.PIPE, text=True)
    assert up.stdout is not None
    direct = f"ws://127.0.0.1:{int(up.stdout.readline())}/acp"
    proxy, url = start_proxy(["ws", "--db", str(db), "--upstream", direct], up)
    return up, proxy, direct, url


def start_proxy(args: list[str], up: subprocess.Popen[str]) -> tuple[subprocess.Popen[str], str]:
    """``acp-proxy ARGS… --listen 127.0.0.1:0`` and the URL of its ``/acp``, once it listens
    (its startup lines passed on to our stderr; ``up`` is stopped if it does not start)."""
    proxy = subprocess.Popen(
        [sys.executable, "-m", "acp_proxy", *args, "--listen", "127.0.0.1:0"],
        stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    assert proxy.stderr is not None
    line = proxy.stderr.readline()
    while "listening on " not in line:
        if not line:
            up.terminate()
            raise SystemExit(f"acp-proxy {args[0]} did not start")
        sys.stderr.write(line)
        line = proxy.stderr.readline()
    return proxy, line.split("listening on ", 1)[1].split(" ", 1)[0] + "/acp"


def stop(up: subprocess.Popen[str], proxy: subprocess.Popen[str]) -> None:
    proxy.terminate()
    proxy.wait()
    up.terminate()
    up.wait()


async def one_way(url: str, payloads: list[bytes], text: bool) -> float:
    async with connect(url, **RAW) as ws:
        await ws.send("count")
        t0 = time.perf_counter()
        for p in payloads:
            await ws.send(p, text=text)
        await ws.send("end")
        n = int(await ws.recv())
        dt = time.perf_counter() - t0
    assert n == len(payloads), (n, len(payloads))
    return dt


async def round_trips(url: str, n: int) -> list[float]:
    out = []
    async with connect(url, **RAW) as ws:
        for i in range(n):
            msg = SMALL % i
            t0 = time.perf_counter_ns()
            await ws.send(msg, text=True)
            await ws.recv(decode=False)
            out.append((time.perf_counter_ns() - t0) / 1000)
    return out


async def long_connection(url: str, n: int, pid: int) -> list[tuple[int, int]]:
    samples = [(0, rss_kb(pid))]
    async with connect(url, **RAW) as ws:
        window = 256

        async def reader() -> None:
            for _ in range(n):
                await ws.recv(decode=False)

        task = asyncio.create_task(reader())
        for i in range(n):
            await ws.send(SMALL % i, text=True)
            if i % window == 0:
                await asyncio.sleep(0)
            if i and i % (n // 10) == 0:
                samples.append((i, rss_kb(pid)))
        await task
    samples.append((n, rss_kb(pid)))
    return samples


def rows_in(db: Path) -> int:
    # read-only: a plain connect would create an empty, world-readable file before the
    # proxy does, and the recorder rightly refuses a database others can read
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    except sqlite3.Error:
        return 0
    try:
        return int(con.execute("SELECT COUNT(*) FROM messages").fetchone()[0])
    except sqlite3.Error:
        return 0
    finally:
        con.close()


async def wait_rows(db: Path, n: int, t0: float) -> float:
    while rows_in(db) < n:
        await asyncio.sleep(0.01)
    return time.perf_counter() - t0


async def bench(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-ws-"))
    db = tmp / "bench.sqlite"
    up, proxy, direct, via = start(db)
    try:
        print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, "
              f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
        small = [SMALL % i for i in range(args.small)]
        size = sum(map(len, small))
        big = [os.urandom(1 << 20)] * args.big
        print(f"\none way, {args.small} small messages ({size / args.small:.0f} B each):")
        for name, url in (("direct", direct), ("acp-proxy", via)):
            before = rows_in(db)
            t0 = time.perf_counter()
            dt = await one_way(url, small, True)
            line = f"  {name:<10} {args.small / dt:>9,.0f} msg/s  {size / dt / 1e6:6.1f} MB/s"
            if name == "acp-proxy":
                # the proxy also records the control messages ("count", "end", the reply)
                rec = await wait_rows(db, before + args.small + 3, t0)
                line += f"   recorded: {args.small / rec:,.0f} msg/s (all rows in the database)"
            print(line)
        print(f"\none way, {args.big} binary messages of 1 MiB:")
        for name, url in (("direct", direct), ("acp-proxy", via)):
            dt = await one_way(url, big, False)
            print(
                f"  {name:<10} {args.big / dt:>9,.0f} msg/s  {args.big * 1.048576 / dt:6.1f} MB/s"
            )
        print(f"\nround trip, one small message at a time ({args.rtt} each):")
        medians = {}
        for name, url in (("direct", direct), ("acp-proxy", via)):
            await round_trips(url, 200)  # warm up
            t = sorted(await round_trips(url, args.rtt))
            medians[name] = statistics.median(t)
            p99 = t[int(len(t) * 0.99)]
            print(f"  {name:<10} median {medians[name]:7.0f} µs   p99 {p99:7.0f} µs")
        print(f"  added by the proxy: {medians['acp-proxy'] - medians['direct']:.0f} µs (median)")
        print(f"\nproxy memory (RSS, with children) over {args.long} round trips, one connection:")
        for i, kb in await long_connection(via, args.long, proxy.pid):
            print(f"  after {i:>8} messages: {kb / 1024:6.1f} MB")
        print(f"\ndatabase: {rows_in(db)} rows, {db.stat().st_size / 1e6:.0f} MB")
    finally:
        stop(up, proxy)


async def _measure(small: int, rtt: int, runs: int) -> list[Row]:
    tmp = Path(tempfile.mkdtemp(prefix="bench-ws-"))
    db = tmp / "bench.sqlite"
    up, proxy, direct, via = start(db)
    try:
        payloads = [SMALL % i for i in range(small)]
        rates: dict[str, list[float]] = {"direct": [], "proxy": []}
        for _ in range(runs):  # alternate, so both see the same load
            rates["direct"].append(small / await one_way(direct, payloads, True))
            rates["proxy"].append(small / await one_way(via, payloads, True))
        await round_trips(direct, 200)
        await round_trips(via, 200)
        added = []
        for _ in range(runs):
            d = statistics.median(await round_trips(direct, rtt))
            p = statistics.median(await round_trips(via, rtt))
            added.append(p - d)
    finally:
        stop(up, proxy)
    worst = min(rates["proxy"])
    ratios = [p / d for p, d in zip(rates["proxy"], rates["direct"], strict=True)]
    return [
        Row(f"ws small messages x {small:,}: msg/s (worst of {runs})",
            f"{min(rates['direct']):,.0f}", f"{worst:,.0f}", ">= 30,000 every run",
            worst >= 30_000),
        Row("  ratio to direct ws (worst, median)", "",
            f"{min(ratios):.0%}, {statistics.median(ratios):.0%}", ">= 80 %",
            min(ratios) >= 0.8),
        Row(f"ws round trip added, median µs (worst of {runs})", "", f"{max(added):,.0f}",
            "<= 200 µs", max(added) <= 200),
    ]  # fmt: skip


def measure(quick: bool) -> list[Row]:
    """The rows of the performance table this benchmark answers for."""
    if quick:
        return asyncio.run(_measure(20_000, 1_000, 3))
    return asyncio.run(_measure(100_000, 3_000, 5))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", type=int, default=50_000)
    ap.add_argument("--big", type=int, default=200)
    ap.add_argument("--rtt", type=int, default=3_000)
    ap.add_argument("--long", type=int, default=200_000)
    asyncio.run(bench(ap.parse_args()))


if __name__ == "__main__":
    main()

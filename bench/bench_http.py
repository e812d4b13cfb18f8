"""Streamable HTTP through ``acp-proxy http``: round trips and requests per second, over
HTTP/2 cleartext (h2c, prior knowledge, both legs) and HTTP/1.1, beside the direct
upstream.

The upstream is a minimal ASGI app under Hypercorn answering each POST ``202``, as the SDK's
server answers a client message; the client is httpx on one connection (HTTP/2: every
request a stream of it; HTTP/1.1: one connection per request at once, kept alive). It
measures the median and p99 of sequential round trips, and the requests per second of
``--concurrent`` requests at once. Figures of record: docs/performance.md.

    python bench/bench_http.py [--requests 2000] [--concurrent 16]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from bench_ws import start_proxy

UPSTREAM = r"""
import asyncio, socket, sys
from hypercorn.asyncio import serve
from hypercorn.config import Config

async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    while (await receive()).get("more_body"):
        pass
    await send({"type": "http.response.start", "status": 202, "headers": []})
    await send({"type": "http.response.body", "body": b""})

sock = socket.socket()
sock.bind(("127.0.0.1", 0))
sock.listen(128)
print(sock.getsockname()[1], flush=True)
config = Config()
config.bind = [f"fd://{sock.detach()}"]
config.accesslog = None
config.keep_alive_max_requests = 1 << 30  # (Hypercorn ends a connection after 1000)
config.loglevel = "WARNING"
asyncio.run(serve(app, config))
"""

BODY = b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}'


def start(db: Path, mode: str) -> tuple[subprocess.Popen[str], subprocess.Popen[str], str, str]:
    """The upstream and ``acp-proxy http`` in front of it: (upstream, proxy, direct URL,
    proxied URL)."""
    up = subprocess.Popen([sys.executable, "-c", UPSTREAM], stdout=subprocess.PIPE, text=True)
    assert up.stdout is not None
    direct = f"http://127.0.0.1:{int(up.stdout.readline())}/acp"
    args = ["http", "--db", str(db), "--upstream", direct, "--upstream-http2", mode]
    proxy, url = start_proxy([*args, "--max-size", str(1 << 20)], up)  # 16 at once in budget
    return up, proxy, direct, url


def client(http2: bool) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    return httpx.AsyncClient(http1=not http2, http2=http2, limits=limits, timeout=30)


async def round_trips(url: str, n: int, http2: bool) -> list[float]:
    async with client(http2) as c:
        headers = {"Content-Type": "application/json", "Acp-Connection-Id": "c1"}
        for _ in range(50):  # warm up: the connections are open
            await c.post(url, content=BODY, headers=headers)
        out = []
        for _ in range(n):
            t = time.perf_counter()
            r = await c.post(url, content=BODY, headers=headers)
            out.append(time.perf_counter() - t)
            assert r.status_code == 202
        return out


async def per_second(url: str, n: int, concurrent: int, http2: bool) -> float:
    async with client(http2) as c:
        headers = {"Content-Type": "application/json", "Acp-Connection-Id": "c1"}
        await asyncio.gather(*(c.post(url, content=BODY, headers=headers) for _ in range(50)))
        left = n

        async def worker() -> None:
            nonlocal left
            while left > 0:
                left -= 1
                r = await c.post(url, content=BODY, headers=headers)
                assert r.status_code == 202

        t = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrent)))
        return n / (time.perf_counter() - t)


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.0f} µs".replace(",", " ")


def added(seconds: float) -> str:
    return ("+" if seconds >= 0 else "−") + us(abs(seconds))


async def measure(url: str, direct: str, a: argparse.Namespace, http2: bool) -> list[str]:
    d = sorted(await round_trips(direct, a.requests, http2))
    p = sorted(await round_trips(url, a.requests, http2))
    dr = await per_second(direct, a.requests, a.concurrent, http2)
    pr = await per_second(url, a.requests, a.concurrent, http2)
    med_d, med_p = statistics.median(d), statistics.median(p)
    p99_d, p99_p = d[int(len(d) * 0.99)], p[int(len(p) * 0.99)]
    name = "h2c" if http2 else "HTTP/1.1"
    return [
        f"| {name} POST round trip, {a.requests}: median | {us(med_d)} | {us(med_p)}: "
        f"{added(med_p - med_d)} |",
        f"| — p99 | {us(p99_d)} | {us(p99_p)}: {added(p99_p - p99_d)} |",
        f"| {name} POSTs, {a.concurrent} at once, requests/s | {dr:.0f} | {pr:.0f} "
        f"({100 * pr / dr:.0f} %) |",
    ]


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--concurrent", type=int, default=16)
    a = ap.parse_args()
    print(f"cpus {os.cpu_count()}, load average {os.getloadavg()[0]:.2f}")
    print("| measure | direct | via proxy |\n| --- | ---: | ---: |")
    for http2, mode in ((True, "auto"), (False, "never")):
        with tempfile.TemporaryDirectory() as tmp:
            up, proxy, direct, url = start(Path(tmp) / "bench.sqlite", mode)
            try:
                for line in await measure(url, direct, a, http2):
                    print(line, flush=True)
            finally:
                proxy.terminate()
                proxy.wait()
                up.terminate()
                up.wait()


if __name__ == "__main__":
    asyncio.run(main())

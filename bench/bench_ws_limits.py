"""What ``acp-proxy ws`` holds under load it cannot pass on, with its connection limit and
in-flight budget: a measurement, not a test.

An upstream that accepts connections and never reads; ``--clients`` clients each send
``--messages`` binary messages of ``--size`` bytes (for ``--hold`` seconds at most) through
``acp-proxy ws --upstream``. Reported: how many clients were admitted and refused (HTTP
503), the bytes committed by the admitted ones (2 × --max-size each) against
``--max-in-flight``, and the proxy's peak resident memory (VmHWM) and memory at the end,
sampled from /proc. Extra arguments go to
``acp-proxy ws`` (``--max-size``, ``--max-in-flight``, ``--max-connections``).

    python bench/bench_ws_limits.py --clients 6 --size 62914560
    python bench/bench_ws_limits.py --clients 300 --size 1024 -- --max-size 1048576

Figures are in docs/websocket.md ("Limits").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
from pathlib import Path

from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import InvalidStatus

RAW = {"compression": None, "max_size": None, "ping_interval": None}


def memory_mib(pid: int) -> dict[str, int]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            out[key] = int(value.split()[0]) // 1024
    return out


async def run(clients: int, messages: int, size: int, hold: float, ws_args: list[str]) -> None:
    upstreams: list[ServerConnection] = []

    async def never_reads(ws: ServerConnection) -> None:
        upstreams.append(ws)
        await ws.wait_closed()  # reads no message: its queue fills, then TCP pushes back

    async with serve(never_reads, "127.0.0.1", 0, max_queue=1, close_timeout=1, **RAW) as upstream:
        port = next(iter(upstream.sockets)).getsockname()[1]
        db = Path(tempfile.mkdtemp()) / "bench.sqlite"
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "acp_proxy", "ws", "--db", str(db), "--listen",
            "127.0.0.1:0", "--upstream", f"ws://127.0.0.1:{port}/acp", *ws_args,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert proc.stderr is not None
        line = (await proc.stderr.readline()).decode()
        url = line.split("listening on ", 1)[1].split(" ", 1)[0]
        idle = memory_mib(proc.pid)
        payload = b"x" * size
        admitted = refused = 0
        peak = 0

        async def client() -> None:
            nonlocal admitted, refused
            try:
                async with connect(url + "/acp", open_timeout=60, close_timeout=1, **RAW) as ws:
                    admitted += 1

                    async def send_all() -> None:
                        for _ in range(messages):
                            await ws.send(payload)  # blocks once the proxy stops reading
                        await asyncio.sleep(hold)

                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(send_all(), hold)
            except InvalidStatus:
                refused += 1
            except OSError:
                refused += 1

        async def drain_stderr() -> None:
            while await proc.stderr.readline():  # type: ignore[union-attr]
                pass

        drain = asyncio.create_task(drain_stderr())
        load = asyncio.gather(*(client() for _ in range(clients)))
        while not load.done():
            peak = max(peak, memory_mib(proc.pid)["VmRSS"])
            await asyncio.sleep(0.05)
        await load
        end = memory_mib(proc.pid)
        proc.kill()  # a stop waits out the close timeout of every leg that reads nothing
        await proc.wait()
        drain.cancel()
        for ws in upstreams:  # paused readers would never see the proxy go
            ws.transport.abort()
    max_size = int(_arg(ws_args, "--max-size", str(64 << 20)))
    budget = int(_arg(ws_args, "--max-in-flight", str(1 << 30)))
    print(f"clients {clients}, {messages} × {size} bytes each, upstream not reading")
    print(f"admitted {admitted}, refused {refused} (HTTP 503)")
    print(
        f"committed {admitted * 2 * max_size >> 20} MiB of --max-in-flight {budget >> 20} MiB "
        f"(2 × --max-size {max_size >> 20} MiB each)"
    )
    print(
        f"proxy memory: idle {idle['VmRSS']} MiB, peak resident {max(peak, end['VmHWM'])} "
        f"MiB, at the end {end['VmRSS']} MiB"
    )


def _arg(args: list[str], name: str, default: str) -> str:
    return args[args.index(name) + 1] if name in args else default


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clients", type=int, default=6)
    p.add_argument("--messages", type=int, default=1)
    p.add_argument("--size", type=int, default=60 << 20)
    p.add_argument("--hold", type=float, default=10.0, help="seconds each client sends for")
    p.add_argument("ws_args", nargs="*", help="after --: options of acp-proxy ws")
    a = p.parse_args()
    asyncio.run(run(a.clients, a.messages, a.size, a.hold, a.ws_args))


if __name__ == "__main__":
    main()

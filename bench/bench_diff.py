"""Benchmark of ``acp-proxy diff`` on two long runs of one session.

Two captures of the same session are recorded through the real recorder (a
:class:`RecorderLink`, as ``acp-proxy record`` does): ``initialize``, ``session/new``, a
prompt answered by ``--chunks`` ``agent_message_chunk`` notifications (one answer of that
many words: what a long turn is), and its response. The second capture's last chunk differs,
so the comparison finds one difference and word-diffs the answer. Then ``diff 1 2`` runs as
a user runs it, beside a bare parse of the stored rows (the limit for anything that reads
them all), with its time and peak memory.

    python bench/bench_diff.py                       # 200 000 chunks a capture
    python bench/bench_diff.py --chunks 1000000
    python bench/bench_diff.py --against HEAD~3      # also from git revision HEAD~3

Figures are in docs/performance.md ("Comparing runs").
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_read import checkout, finish_recording  # noqa: E402
from bench_reading import bare_parse  # noqa: E402

from acp_proxy.protocol.frames import Direction  # noqa: E402
from acp_proxy.record.link import CaptureMeta, RecorderLink  # noqa: E402

C2A, A2C = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT
CHUNK = (
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":'
    b'{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"%s "}}}}\n'
)


def record(db: Path, chunks: int, last_word: bytes) -> None:
    link = RecorderLink(db)
    tap = link.open_capture(CaptureMeta(transport="stdio", agent_command=["bench-agent"]))
    init = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n'
    tap.chunk(C2A, init)
    tap.chunk(A2C, b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}\n')
    new = b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}'
    tap.chunk(C2A, new + b"\n")
    tap.chunk(A2C, b'{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}\n')
    tap.chunk(
        C2A,
        b'{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1",'
        b'"prompt":[{"type":"text","text":"go"}]}}\n',
    )
    block = CHUNK % b"word"
    for start in range(0, chunks - 1, 1000):
        tap.chunk(A2C, block * min(1000, chunks - 1 - start))
    tap.chunk(A2C, CHUNK % last_word)
    tap.chunk(A2C, b'{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}\n')
    finish_recording(link, tap, db)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=200_000)
    ap.add_argument("--against", metavar="REV", help="also run diff from git revision REV")
    args = ap.parse_args()
    db = Path(tempfile.mkdtemp()) / "diff.sqlite"
    record(db, args.chunks, b"word")
    record(db, args.chunks, b"other")
    print(f"two captures of {args.chunks + 6} frames each")
    bare, _cpu = bare_parse(db)
    print(f"  bare parse of both:  {bare:7.2f} s")
    codes = [("this tree", ROOT)]
    if args.against:
        codes.append((args.against, checkout(args.against, Path(tempfile.mkdtemp()))))
    for name, code in codes:
        took, peak, _ = run_diff(db, code)
        print(f"  diff ({name}): {took:7.2f} s = {took / bare:5.1f}× bare, peak {peak:6.0f} MiB")


def run_diff(db: Path, code: Path) -> tuple[float, float, int]:
    """(seconds to exit, peak RSS in MiB, bytes of output) of ``diff 1 2`` run from the
    package in ``code``; it exits 1, the runs differing."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        ["/usr/bin/time", "-f", "%M", sys.executable, "-m", "acp_proxy", "diff", "1", "2",
         "--db", str(db)],
        capture_output=True, cwd=code, check=False,
    )  # fmt: skip
    took = time.perf_counter() - t0
    if proc.returncode != 1:
        raise SystemExit(f"diff exited {proc.returncode}: {proc.stderr.decode()[-500:]}")
    peak_kb = int(proc.stderr.decode().strip().splitlines()[-1])
    return took, peak_kb / 1024, len(proc.stdout)


if __name__ == "__main__":
    main()

"""Big captures for the tests of streaming, progress and the HTML export: recorded through
the proxy in front of ``bench/flood_agent.py`` (message chunks), or the sessions of tool
calls, terminals and diffs the reconstruction benchmark builds; and a process's peak
memory read from /proc while it runs.

No tests here; the test modules import it.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from pathlib import Path

from support.messages import import_frames
from support.paths import ROOT
from support.proc import PROXY, db_rows, wait_recorded


def record_flood(db: Path, frames: int, size: int = 200) -> None:
    agent = [sys.executable, str(ROOT / "bench" / "flood_agent.py"), "flood"]
    subprocess.run(
        [*PROXY, "record", "--db", str(db), "--", *agent, "--count", str(frames), "--size",
         str(size)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=True, timeout=300,
    )  # fmt: skip
    wait_recorded(db)
    assert db_rows(db, "SELECT COUNT(*) FROM messages") == [(frames,)]


def record_sessions(db: Path, frames: int, work: Path) -> None:
    """``frames`` frames of the synthetic v1 and v2 sessions of bench/bench_reconstruct.py
    (a tool call, a terminal and a diff or two in every turn), imported into ``db``."""
    spec = importlib.util.spec_from_file_location(
        "bench_reconstruct", ROOT / "bench" / "bench_reconstruct.py"
    )
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    import_frames(db, bench.build(frames), work)


def peak_rss_kib(args: list[str]) -> int:
    """Run ``acp-proxy ARGS`` (stdout discarded); its peak resident set size (VmHWM)."""
    proc = subprocess.Popen([*PROXY, *args], stdout=subprocess.DEVNULL, cwd=ROOT)
    peak = 0
    while proc.poll() is None:
        try:
            with open(f"/proc/{proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]))
        except OSError:
            pass
        time.sleep(0.02)
    assert proc.returncode == 0
    return peak

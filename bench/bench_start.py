"""Benchmark of how soon ``acp-proxy record`` starts its agent, and how soon it is done.

An editor that launches an agent through the proxy waits for the proxy's own start before
the agent's: Python and the modules the relay imports. This runs ``acp-proxy record --
AGENT`` many times, where the agent writes the time it started on stderr and exits, and
prints the median time from the command's start to the agent's start and to the command's
exit, beside the same agent started directly (the limit).

    python bench/bench_start.py                  # 20 runs
    python bench/bench_start.py --against HEAD~3 # also from git revision HEAD~3

Figures are in docs/performance.md ("Starting the agent").
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_read import checkout  # noqa: E402

AGENT = [sys.executable, "-S", "-c", "import sys, time; sys.stderr.write(str(time.time_ns()))"]


def working_copy(into: Path) -> Path:
    """The files of the working tree (committed or not), copied under ``into``."""
    files = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "-co", "--exclude-standard", "acp_proxy"],
        capture_output=True,
        check=True,
    ).stdout
    into.mkdir()
    tar = subprocess.run(
        ["tar", "-c", "--null", "-T", "-", "-C", str(ROOT)], input=files, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=tar.stdout, check=True)
    return into


def once(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(ms to the agent's start, ms to the command's exit) of one run; ``python -m`` finds
    the package in ``cwd`` first."""
    start = time.time_ns()
    r = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, env=env, cwd=cwd)
    end = time.time_ns()
    started = int(r.stderr.decode().split("acp-proxy")[0].strip() or 0)
    if r.returncode != 0 or not started:
        raise SystemExit(f"{command[:3]} failed: {r.stderr.decode()[-300:]}")
    return (started - start) / 1e6, (end - start) / 1e6


def measure(label: str, command: list[str], runs: int, env: dict[str, str], cwd: Path) -> None:
    times = [once(command, env, cwd) for _ in range(runs)]
    agent = statistics.median(t for t, _ in times)
    done = statistics.median(t for _, t in times)
    print(f"{label:<28} agent started {agent:7.1f} ms   command done {done:7.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--against", metavar="REV", help="also run git revision REV")
    args = ap.parse_args()
    print(
        f"python {platform.python_version()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"
    )
    with tempfile.TemporaryDirectory(prefix="bench-start-") as tmp:
        db = Path(tmp) / "start.sqlite"
        env = dict(os.environ)
        env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
        env.pop("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", None)
        measure("direct", AGENT, args.runs, env, ROOT)
        trees = [("this tree", ROOT)]
        if args.against:  # both from a copy, so that neither has the other's caches
            trees = [("this tree", working_copy(Path(tmp) / "this"))]
            trees.append((args.against, checkout(args.against, Path(tmp))))
        for label, tree in trees:
            proxy = [sys.executable, "-m", "acp_proxy", "record", "--db", str(db), "--"]
            subprocess.run([*proxy, *AGENT], env=env, cwd=tree, capture_output=True)  # caches
            measure(f"record ({label})", [*proxy, *AGENT], args.runs, env, tree)


if __name__ == "__main__":
    main()

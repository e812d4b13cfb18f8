"""Peak memory of the commands that read a whole capture: ``show --json``, ``export``
(jsonl and html), on a big capture recorded through the proxy.

The capture is recorded with ``record`` in front of ``bench/flood_agent.py`` (message chunks
of ``--size`` bytes, ``bench/flood.py``), then each command runs in a process of its own,
output to /dev/null, and its peak resident set size (``VmHWM``) is reported.

    python bench/bench_memory.py --frames 200000
    PYTHONPATH=/path/to/another/checkout python bench/bench_memory.py   # compare a version
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from flood import peak_rss_kib, record_flood

COMMANDS = {
    "show --json": ["show", "--json"],
    "export jsonl": ["export", "--format", "jsonl"],
    "export html": ["export", "--format", "html"],
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--frames", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=300)
    ap.add_argument("--db", type=Path, help="Use this recorded database (one capture).")
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = opts.db or Path(tmp) / "big.sqlite"
        if opts.db is None:
            record_flood(db, opts.frames, opts.size)
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, db {db}")
        for name, args in COMMANDS.items():
            t = time.monotonic()
            rss = peak_rss_kib([*args, "--db", str(db)]) / 1024
            print(f"{name:<14} peak RSS {rss:8.1f} MiB  ({time.monotonic() - t:.1f} s)")


if __name__ == "__main__":
    main()

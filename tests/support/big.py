"""Big captures for the tests of streaming, progress and the HTML export: a flood recorded
through the proxy (what ``bench/flood.py`` does for the benches, with a check that every
frame was stored), or the sessions of tool calls, terminals and diffs the reconstruction
benchmark builds; and a command's peak memory.

No tests here; the test modules import it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from support.messages import import_frames
from support.paths import ROOT
from support.proc import db_rows

sys.path.append(str(ROOT / "bench"))
import flood

__all__ = ["peak_rss_kib", "record_flood", "record_sessions"]


def record_flood(db: Path, frames: int, size: int = 200) -> None:
    flood.record_flood(db, frames, size, timeout=300)
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
    """The peak memory of ``acp-proxy ARGS`` run from the repository (this checkout's code)."""
    return flood.peak_rss_kib(args, cwd=ROOT)

"""Big captures for the tests of streaming, progress and the HTML export, and a command's
peak memory: what ``bench/flood.py`` does for the benches, with a check that every frame
was stored.

No tests here; the test modules import it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from support.paths import ROOT
from support.proc import db_rows

sys.path.append(str(ROOT / "bench"))
import flood

__all__ = ["peak_rss_kib", "record_flood"]


def record_flood(db: Path, frames: int, size: int = 200) -> None:
    flood.record_flood(db, frames, size, timeout=300)
    assert db_rows(db, "SELECT COUNT(*) FROM messages") == [(frames,)]


def peak_rss_kib(args: list[str]) -> int:
    """The peak memory of ``acp-proxy ARGS`` run from the repository (this checkout's code)."""
    return flood.peak_rss_kib(args, cwd=ROOT)

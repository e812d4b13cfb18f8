"""Where the tests find the repository, their data and their peers."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
ROOT = TESTS.parent
PACKAGE = ROOT / "acp_proxy"
RECORDINGS = ROOT / "recordings"
DATA = TESTS / "data"
PEERS = TESTS / "peers"

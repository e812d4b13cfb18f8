"""Shared helpers for the replay tests: a recorded demo session, commands, comparisons.

No tests here; the replay test modules import it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from proxy.events import Direction
from proxy.jsonrpc import decode
from proxy.store import Store

DATA = Path(__file__).parent / "data" / "replay"
DEMO_AGENT = [sys.executable, "-m", "proxy.demo.agent"]
DEMO_CLIENT = [sys.executable, "-m", "proxy.demo.client"]
# `python -m proxy.cli` would not see commands registered by the cli_*.py modules (they
# register on proxy.cli.main, not on __main__.main), so run the entry point itself.
CLI = [sys.executable, "-c", "import sys; from proxy.cli import main; main(sys.argv[1:])"]


def replay_agent_cmd(db: Path, *extra: str) -> list[str]:
    return [*CLI, "replay", "agent", "--db", str(db), *extra]


def replay_client_cmd(db: Path, *extra: str) -> list[str]:
    return [*CLI, "replay", "client", "--db", str(db), *extra]


def agent_values(db: Path, capture: int | None = None) -> list[dict[str, Any]]:
    """What the agent said in a capture, parsed (notifications, requests, responses)."""
    store = Store(db)
    try:
        c = store.capture(capture)
        return [
            decode(f.raw) for f in store.frames(c["id"]) if f.direction is Direction.AGENT_TO_CLIENT
        ]
    finally:
        store.close()


def session_cwd(db: Path, capture: int | None = None) -> str:
    store = Store(db)
    try:
        c = store.capture(capture)
        for f in store.frames(c["id"]):
            if f.method == "session/new" and f.kind == "request":
                return str(decode(f.raw)["params"]["cwd"])
    finally:
        store.close()
    raise AssertionError("no session/new in the capture")


def without_cwd(values: list[Any], cwd: str) -> list[Any]:
    """Values with one workspace path replaced by a placeholder, for comparing runs."""
    text = json.dumps(values).replace(cwd, "<cwd>")
    return list(json.loads(text))


def jsonl_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

"""A capture whose agent dies mid-turn (tests/peers/crash_agent.py): a traceback on
stderr, exit 3, the prompt never answered — the case a debugging session is about.

No tests here; the test modules import it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from support.proc import PROXY, peer, wait_recorded

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
NEW = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "session/new",
    "params": {"cwd": "/w", "mcpServers": []},
}
PROMPT = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "session/prompt",
    "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "go"}]},
}


def _lines(*messages: object) -> bytes:
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


def record_crash(db: Path, code: int = 3, label: str | None = None) -> None:
    """A capture whose agent dies mid-turn: exit ``code``, a traceback on stderr, the
    prompt never answered."""
    extra = ["--label", label] if label else []
    proc = subprocess.Popen(
        [*PROXY, "record", "--db", str(db), *extra, "--", *peer("crash_agent.py", str(code))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    for msg in (INIT, NEW):
        proc.stdin.write(_lines(msg))
        proc.stdin.flush()
        proc.stdout.readline()
    proc.stdin.write(_lines(PROMPT))
    proc.stdin.flush()
    proc.communicate(timeout=60)
    assert proc.returncode == code
    wait_recorded(db)

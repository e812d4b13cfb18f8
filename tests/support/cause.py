"""A capture whose agent fails with the cause only on its stderr, as real agents do.

claude-code-acp answers ``session/new`` with ``-32603 Internal error`` and says why only on
stderr, in colour; this recording does the same with a message no other test uses, and a
key in the same line that a shared copy must not carry.
"""

from __future__ import annotations

from pathlib import Path

from support.hostile import record_script
from support.proc import wait_recorded

UNIQUE = "zorblax-cannot-run-as-root-7431"
SECRET = "sk-ant-api03-" + "Q" * 40
STDERR_LINE = (
    f"\x1b[2m2026-12-03T10:00:00Z\x1b[0m \x1b[1;31mERROR\x1b[0m {UNIQUE}: "
    f"--dangerously-skip-permissions cannot be used with root/sudo (key {SECRET})\n"
)


def failing_capture(db: Path, tmp_path: Path) -> None:
    """Record it into ``db``: initialize, session/new, then a prompt that fails."""
    steps = [
        ("c2a", {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                 "params": {"protocolVersion": 1, "clientInfo": {"name": "t", "version": "1"}}}),
        ("a2c", {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}}),
        ("c2a", {"jsonrpc": "2.0", "id": 1, "method": "session/new",
                 "params": {"cwd": "/tmp", "mcpServers": []}}),
        ("a2c", {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s1"}}),
        ("c2a", {"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                 "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "go"}]}}),
        ("stderr", STDERR_LINE),
        ("a2c", {"jsonrpc": "2.0", "id": 2, "error": {"code": -32603, "message": "Internal error",
                 "data": {"message": f"{UNIQUE} query failed"}}}),
    ]  # fmt: skip
    record_script(db, tmp_path, steps)
    wait_recorded(db)

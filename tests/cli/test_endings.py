"""Who ended a capture, in one vocabulary: `captures`, the turns view and `check` agree, and
a request the client cut short is nobody's fault (docs/check.md `rpc.cut-short`)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.proc import PROXY, wait_recorded

# answers initialize and session/new, never the prompt; after its stdin ends it lingers
# (LINGER) or exits 3 (CRASH)
AGENT = r"""
import json, sys, time
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        r = {"protocolVersion": 1}
    elif m.get("method") == "session/new":
        r = {"sessionId": "s1"}
    elif m.get("method") == "session/prompt" and sys.argv[1] == "crash":
        sys.exit(3)
    else:
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
time.sleep(60)
"""

LINES = [
    {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}},
    {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}},
    {"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
     "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "go"}]}},
]  # fmt: skip


def session(db: Path, mode: str, end: str) -> None:
    proc = subprocess.Popen(
        [*PROXY, "record", "--db", str(db), "--grace", "0.2", "--",
         sys.executable, "-c", AGENT, mode],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    for m in LINES:
        proc.stdin.write(json.dumps(m).encode() + b"\n")
    proc.stdin.flush()
    proc.stdout.readline()  # initialize answered
    proc.stdout.readline()  # session/new answered: the prompt is with the agent
    time.sleep(0.2)
    if end == "close":
        proc.stdin.close()
    else:
        proc.send_signal(getattr(signal, end))
    proc.wait(timeout=30)
    proc.stdout.close()
    if proc.stdin and not proc.stdin.closed:
        proc.stdin.close()
    wait_recorded(db)


def cli(db: Path, *args: str) -> str:
    r = subprocess.run([*PROXY, *args, "--db", str(db)], capture_output=True, text=True,
                       timeout=60)  # fmt: skip
    return r.stdout


@pytest.mark.parametrize(
    ("mode", "end", "status", "why", "rule"),
    [
        ("linger", "SIGTERM", "ended by client: SIGTERM", "the client ended it (SIGTERM)",
         "rpc.cut-short"),
        ("linger", "SIGKILL", "proxy killed", "the proxy was killed", "rpc.cut-short"),
        ("linger", "close", "ended by proxy: SIGTERM",
         "the proxy ended the agent after the client left (SIGTERM)", "rpc.cut-short"),
        ("crash", "close", "exit 3", "agent exited 3", "rpc.unanswered"),
    ],
)  # fmt: skip
def test_who_ended_it_is_said_once_and_agreed_on(
    tmp_path: Path, mode: str, end: str, status: str, why: str, rule: str
) -> None:
    db = tmp_path / "e.sqlite"
    session(db, mode, end)
    (row,) = json.loads(cli(db, "captures", "--json"))
    assert row["status"] == status
    if mode == "linger":
        last_t = json.loads(cli(db, "show", "--json"))["frames"][-1]["t_ns"] / 1e9
        # the client waited 0.2 s after the last frame before it ended the session: a
        # capture lasts until its end was seen, not until its last record, however it ended
        assert row["duration_s"] >= last_t + 0.2
    turns = cli(db, "show", "--view", "turns", "--no-pager")
    assert f"cut short: {why} before answering" in turns
    found = json.loads(cli(db, "check", "--format", "json"))
    rules = {(f["rule"], f["side"]) for c in found["captures"] for f in c["findings"]}
    side = "agent" if rule == "rpc.unanswered" else "capture"
    assert (rule, side) in rules
    assert ("rpc.unanswered", "agent") not in rules or rule == "rpc.unanswered"

"""Shared helpers for the tests of hostile recordings: a scripted conversation recorded
through ``acp-proxy record`` in a fixed order, and a session full of terminal controls.

No tests here; the test modules import it.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from support.proc import PROXY, peer, wait_recorded

# OSC 52 (clipboard), OSC 0 (window title), CSI 2J (clear), BEL, and C1 controls: CSI,
# OSC and ST as single characters, and NEL.
EVIL = "\x1b]52;c;cHduZWQ=\x07\x1b]0;pwned\x07\x1b[2J\x07\x9b2J\x9d0;t\x9c\x85\r"

Step = tuple[str, Any]  # ("c2a" | "a2c", message) or ("stderr", text)


def _line(message: Any) -> str:
    # text as is; objects as JSON: C0 controls escaped (\u001b), C1 and DEL written raw
    if isinstance(message, str):
        return message
    return json.dumps(message, ensure_ascii=False)


def record_script(
    db: Path, tmp_path: Path, steps: Sequence[Step], *, extra: Sequence[str] = ()
) -> subprocess.CompletedProcess[bytes]:
    """Record ``steps`` in order: the client's lines are written to the proxy, the agent's
    (tests/peers/script_agent.py) are awaited before the next step."""
    script = tmp_path / "script.jsonl"
    script.write_text(
        "".join(json.dumps([w, _line(m) if w != "stderr" else m]) + "\n" for w, m in steps),
        encoding="utf-8",
    )
    proc = subprocess.Popen(
        [*PROXY, "record", "--db", str(db), *extra, "--", *peer("script_agent.py", str(script))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out = b""
    for where, message in steps:
        if where == "c2a":
            proc.stdin.write(_line(message).encode("utf-8", "surrogateescape") + b"\n")
            proc.stdin.flush()
        elif where == "a2c":
            out += proc.stdout.readline()
    proc.stdin.close()
    out += proc.stdout.read()
    err = proc.stderr.read()
    code = proc.wait(60)
    wait_recorded(db)
    return subprocess.CompletedProcess(proc.args, code, out, err)


def _rpc(**fields: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", **fields}


def _update(sid: str, update: dict[str, Any]) -> Step:
    return ("a2c", _rpc(method="session/update", params={"sessionId": sid, "update": update}))


def hostile_session(cwd: str) -> list[Step]:
    """A v1 session whose every peer-chosen string carries :data:`EVIL`: names, session id,
    titles, tool calls, a terminal (command, output), file paths, permission options,
    method names, errors, agent stderr, and a line that is not JSON at all."""
    sid = "sess" + EVIL
    tc = "tool" + EVIL
    inside = f"{cwd}/file{EVIL}.txt"
    return [
        ("c2a", _rpc(id=0, method="initialize", params={
            "protocolVersion": 1, "clientInfo": {"name": "editor" + EVIL, "version": EVIL}})),
        ("a2c", _rpc(id=0, result={
            "protocolVersion": 1, "agentInfo": {"name": "agent" + EVIL, "version": EVIL}})),
        ("stderr", "agent log " + EVIL + "\n"),
        ("c2a", _rpc(id=1, method="session/new", params={"cwd": cwd, "mcpServers": []})),
        ("a2c", _rpc(id=1, result={"sessionId": sid})),
        ("c2a", _rpc(id=2, method="session/prompt", params={
            "sessionId": sid, "prompt": [{"type": "text", "text": "do it" + EVIL}]})),
        _update(sid, {"sessionUpdate": "session_info_update", "title": "title" + EVIL}),
        _update(sid, {"sessionUpdate": "agent_message_chunk",
                      "content": {"type": "text", "text": "said" + EVIL}}),
        _update(sid, {"sessionUpdate": "plan", "entries": [
            {"content": "step" + EVIL, "priority": EVIL, "status": "pending"}]}),
        _update(sid, {"sessionUpdate": "tool_call", "toolCallId": tc, "title": "edit" + EVIL,
                      "kind": "edit" + EVIL, "status": "pending",
                      "locations": [{"path": "/loc" + EVIL, "line": 1}],
                      "rawInput": {"x": EVIL},
                      "content": [{"type": "diff", "path": inside, "oldText": "old\n",
                                   "newText": "new" + EVIL + "\n"}]}),
        ("a2c", _rpc(id=3, method="session/request_permission", params={
            "sessionId": sid, "toolCall": {"toolCallId": tc, "title": "perm" + EVIL},
            "options": [{"optionId": "ok" + EVIL, "name": EVIL, "kind": "allow_once"}]})),
        ("c2a", _rpc(id=3, result={"outcome": {"outcome": "selected", "optionId": "ok" + EVIL}})),
        ("a2c", _rpc(id=4, method="terminal/create", params={
            "sessionId": sid, "command": "make" + EVIL, "args": ["arg" + EVIL],
            "cwd": cwd + EVIL})),
        ("c2a", _rpc(id=4, result={"terminalId": "term" + EVIL})),
        ("a2c", _rpc(id=5, method="terminal/output", params={
            "sessionId": sid, "terminalId": "term" + EVIL})),
        ("c2a", _rpc(id=5, result={"output": "out " + EVIL + " \x90x\x9c done\n",
                                   "truncated": False, "exitStatus": {"exitCode": 0}})),
        ("a2c", _rpc(id=6, method="fs/write_text_file", params={
            "sessionId": sid, "path": f"{cwd}/../outside{EVIL}", "content": EVIL})),
        ("c2a", _rpc(id=6, result=None)),
        ("a2c", _rpc(id=7, method="fs/write_text_file", params={
            "sessionId": sid, "path": f"/elsewhere/{EVIL}", "content": EVIL})),
        ("c2a", _rpc(id=7, error={"code": -32000, "message": "refused" + EVIL})),
        _update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": tc,
                      "status": "completed", "rawOutput": EVIL}),
        ("a2c", _rpc(method="custom" + EVIL, params={"k" + EVIL: EVIL})),
        ("a2c", "\x1b]0;not json\x07 \x1b[2J"),
        ("stderr", "\x1b]52;c;cHduZWQ=\x07 \x9b\xc2\x9b2J\n"),
        ("a2c", _rpc(id=2, result={"stopReason": "end_turn" + EVIL})),
    ]  # fmt: skip


# C0 but newline and tab, DEL, C1, and C1 bytes that are not UTF-8 (surrogate escapes)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\udc80-\udc9f]")


def raw_controls(data: bytes) -> list[str]:
    """The control characters in ``data`` a terminal would act on (newline and tab are
    layout): ESC, BEL, the other C0 controls, DEL and C1, however they are encoded."""
    return [repr(c) for c in _CONTROLS.findall(data.decode("utf-8", "surrogateescape"))]

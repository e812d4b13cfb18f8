"""Replaying a hand-written ACP v2 capture (docs/protocol.md §9.2 shapes): both stand-ins."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from support.replay import DATA, jsonl_lines, replay_agent_cmd, replay_client_cmd

V2 = DATA / "v2_session.jsonl"


def _client_lines() -> list[dict[str, Any]]:
    return [json.loads(o["text"]) for o in jsonl_lines(V2) if o["direction"] == "c2a"]


def test_replay_agent_plays_a_v2_session(tmp_path: Path) -> None:
    lines = _client_lines()
    lines[1]["params"]["cwd"] = str(tmp_path)  # another workspace
    lines[2]["id"] = 20  # and other ids
    r = subprocess.run(
        replay_agent_cmd(tmp_path / "none.sqlite", str(V2)),
        input="".join(json.dumps(v) + "\n" for v in lines).encode(),
        capture_output=True,
        timeout=30,
    )
    assert r.returncode == 0, r.stderr.decode()
    out = [json.loads(x) for x in r.stdout.splitlines()]
    assert out[2] == {"jsonrpc": "2.0", "id": 20, "result": {"messageId": "msg_u1"}}
    kinds = [
        o["params"]["update"]["sessionUpdate"] for o in out if o.get("method") == "session/update"
    ]
    assert kinds[:3] == ["user_message", "state_update", "tool_call_update"]
    assert kinds[-1] == "state_update"
    permission = next(o for o in out if o.get("method") == "session/request_permission")
    assert permission["id"] == 5
    assert permission["params"]["subject"]["cwd"] == str(tmp_path)
    terminal = next(o for o in out if o.get("params", {}).get("update", {}).get("cwd"))
    assert terminal["params"]["update"]["cwd"] == str(tmp_path)
    assert out[-1] == {"jsonrpc": "2.0", "id": 3, "result": {}}


def test_replay_client_against_the_v2_replay_agent(tmp_path: Path) -> None:
    db = tmp_path / "v2.sqlite"
    r = subprocess.run(
        [*replay_client_cmd(db, str(V2), "--json"), "--", *replay_agent_cmd(db, str(V2))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    out = json.loads(r.stdout)
    (turn,) = out["replayed"]["turns"]
    assert turn["stop_reason"] == "end_turn"
    assert turn["tool_calls"] == [
        {
            "title": "cargo test",
            "kind": "execute",
            "statuses": ["pending", "in_progress", "completed"],
        }
    ]
    assert out["replayed"]["files"] == {"/home/u/proj/Cargo.lock": "<modify>"}


def test_a_changed_v2_agent_diverges(tmp_path: Path) -> None:
    changed = tmp_path / "changed.jsonl"
    text = V2.read_text()
    text = text.replace('\\"stopReason\\":\\"end_turn\\"', '\\"stopReason\\":\\"cancelled\\"')
    text = text.replace('\\"status\\":\\"completed\\"', '\\"status\\":\\"failed\\"')
    changed.write_text(text)
    db = tmp_path / "v2.sqlite"
    r = subprocess.run(
        [*replay_client_cmd(db, str(V2)), "--", *replay_agent_cmd(db, str(changed))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert "  turn 1 (session 1) · stop reason: recorded end_turn; replayed cancelled" in lines
    assert (
        "  turn 1 (session 1) · tool call 1 'cargo test' statuses: recorded pending → "
        "in_progress → completed; replayed pending → in_progress → failed"
    ) in lines

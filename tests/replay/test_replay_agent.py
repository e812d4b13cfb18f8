"""``replay agent``: a recording stands in for the agent, over stdio, for real clients."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from acp.schema import SessionNotification
from support.replay import (
    DEMO_AGENT,
    DEMO_CLIENT,
    agent_values,
    replay_agent_cmd,
    sdk_session,
    session_cwd,
    without_cwd,
)

from acp_proxy.demo import proxy_argv, run_demo


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One recorded demo session (the original), shared by the tests of this module."""
    db = tmp_path_factory.mktemp("replay-agent") / "demo.sqlite"
    run_demo(db)
    return db


def test_demo_client_sees_the_recorded_session(demo_db: Path, tmp_path: Path) -> None:
    """The demo client, run against the replay (recorded through the proxy), receives
    exactly what the demo agent sent, with its own workspace path in place of the old one."""
    seen = tmp_path / "seen.sqlite"
    workspace = tmp_path / "ws"
    replay = replay_agent_cmd(demo_db, "--", *DEMO_AGENT)
    r = subprocess.run(
        [*DEMO_CLIENT, "--workspace", str(workspace), "--", *proxy_argv(seen, *replay)],
        capture_output=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr.decode()
    assert b"the replay ran clean" in r.stderr
    assert b"turn 2 ended: cancelled" in r.stderr
    original = without_cwd(agent_values(demo_db), session_cwd(demo_db))
    replayed = without_cwd(agent_values(seen), str(workspace))
    assert replayed == original
    assert '"debug": true' in (workspace / "config.json").read_text()


async def test_sdk_client_sees_the_recorded_updates_and_results(
    demo_db: Path, tmp_path: Path
) -> None:
    """An SDK editor (another clientInfo, its own ids and workspace) gets every recorded
    update, the recorded results and stop reasons, and the agent's requests with paths
    under its own workspace."""
    client, results = await sdk_session(replay_agent_cmd(demo_db), tmp_path)
    assert results == [
        "demo-agent",
        "end_turn",
        {"prompts": 1, "uptimeMs": 12, "_meta": {"demo.acp-proxy/custom": True}},
        "cancelled",
    ]
    cwd = session_cwd(demo_db)
    recorded = [
        SessionNotification.model_validate(v["params"]).update.model_dump(
            mode="json", by_alias=True, exclude_none=True
        )
        for v in agent_values(demo_db)
        if v.get("method") == "session/update"
    ]
    assert without_cwd(client.updates, str(tmp_path)) == without_cwd(recorded, cwd)
    assert client.notes == ["demo.acp-proxy/progress"]
    assert '"debug": true' in (tmp_path / "config.json").read_text()


def test_unknown_request_gets_an_error_naming_the_closest(demo_db: Path) -> None:
    lines = [
        {"jsonrpc": "2.0", "id": "a", "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": "b", "method": "session/new",
         "params": {"cwd": "/nowhere/ws", "mcpServers": []}},
        {"jsonrpc": "2.0", "id": "c", "method": "session/prompt",
         "params": {"sessionId": "sess_demo_1", "prompt": [{"type": "text", "text": "Hi"}]}},
        {"jsonrpc": "2.0", "id": 7, "method": "session/list", "params": {}},
    ]  # fmt: skip
    r = subprocess.run(
        replay_agent_cmd(demo_db),
        input=b"".join(json.dumps(v).encode() + b"\n" for v in lines),
        capture_output=True,
        timeout=30,
    )
    assert r.returncode == 1
    out = [json.loads(line) for line in r.stdout.splitlines()]
    assert [o["id"] for o in out] == ["a", "b", "c", 7]
    assert out[1]["result"]["sessionId"] == "sess_demo_1"
    prompt_error = out[2]["error"]
    assert prompt_error["code"] == -32602
    assert "closest recorded request is #4 request session/prompt [2]" in prompt_error["message"]
    assert "params.prompt" in prompt_error["message"]
    assert prompt_error["data"]["closest"] == {"seq": 4, "method": "session/prompt"}
    assert out[3]["error"]["code"] == -32601
    assert "session/list" in out[3]["error"]["message"]
    err = r.stderr.decode()
    assert "no recorded answer for session/prompt" in err
    assert "no recorded answer for session/list" in err
    assert "did not run clean" in err


def test_trailing_agent_command_is_ignored_and_stdout_is_protocol_only(demo_db: Path) -> None:
    init = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n'
    r = subprocess.run(
        [*replay_agent_cmd(demo_db), "--", "no-such-agent", "--flag", "1"],
        input=init,
        capture_output=True,
        timeout=30,
    )
    lines = r.stdout.splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["result"]["protocolVersion"] == 1
    assert b"never sent" in r.stderr  # the rest of the session did not happen: not clean
    assert r.returncode == 1


@pytest.mark.parametrize("extra", [["--timing", "x20"], ["--session", "sess_demo_1"]])
def test_pacing_and_session_choice_keep_the_session_intact(
    demo_db: Path, tmp_path: Path, extra: list[str]
) -> None:
    r = subprocess.run(
        [*DEMO_CLIENT, "--workspace", str(tmp_path), "--", *replay_agent_cmd(demo_db, *extra)],
        capture_output=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr.decode()
    assert b"the replay ran clean" in r.stderr


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--timing", "slowly"],
            "--timing must be fast, original or xN (like x2 or x0.5), not 'slowly'",
        ),
        (["--session", "nope"], "no session 'nope' in the recording (sessions: sess_demo_1)"),
        (["no/such/file.jsonl"], "no recording file no/such/file.jsonl"),
    ],
)
def test_bad_choices_are_one_line_errors(demo_db: Path, extra: list[str], message: str) -> None:
    r = subprocess.run(replay_agent_cmd(demo_db, *extra), capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.strip() == f"acp-proxy: error: {message}"

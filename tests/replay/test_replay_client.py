"""``replay client``: the recorded client drives a real agent; the runs are compared."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.replay import DATA, DEMO_AGENT, replay_client_cmd

from acp_proxy.demo import run_demo
from acp_proxy.store.reader import Store

CHANGED = [sys.executable, str(DATA / "changed_agent.py")]


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("replay-client") / "demo.sqlite"
    run_demo(db)
    return db


def _replay(db: Path, *args: str, agent: list[str]) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(Path(__file__).parents[1])}  # the changed agent imports proxy
    return subprocess.run(
        [*replay_client_cmd(db, *args), "--", *agent],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )


def test_demo_agent_replays_without_divergence(demo_db: Path) -> None:
    r = _replay(demo_db, "1", "--json", agent=DEMO_AGENT)
    assert r.returncode == 0, r.stdout + r.stderr
    out = json.loads(r.stdout)
    assert out["diverged"] is False and out["divergences"] == [] and out["problems"] == []
    assert [t["stop_reason"] for t in out["replayed"]["turns"]] == ["end_turn", "cancelled"]
    assert [t["statuses"] for t in out["replayed"]["turns"][0]["tool_calls"]] == [
        ["pending", "completed"],
        ["in_progress", "completed"],
        ["pending", "in_progress", "completed"],
    ]
    assert out["replayed"] == out["recorded"]
    store = Store(demo_db)
    try:
        new = store.capture(out["replay_capture"])
        assert new["label"].startswith("replay client of ")
        assert new["exit_code"] == 0 and new["protocol_version"] == 1
        methods = [f.method for f in store.frames(new["id"]) if f.kind == "request"]
    finally:
        store.close()
    assert methods.count("session/prompt") == 2 and "session/request_permission" in methods


def test_text_report_says_no_divergence(demo_db: Path) -> None:
    r = _replay(demo_db, agent=DEMO_AGENT)  # the latest capture: a replay of the demo is fine
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1] == "no divergence"


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        (
            "status",
            "turn 1 (session 1) · tool call 3 'Run the tests' statuses: recorded pending → "
            "in_progress → completed; replayed pending → in_progress → failed",
        ),
        ("stop", "turn 1 (session 1) · stop reason: recorded end_turn; replayed refusal"),
        (
            "title",
            "turn 1 (session 1) · tool call 1 title: recorded Read config.json; "
            "replayed Read the configuration",
        ),
    ],
)
def test_changed_agent_divergence_is_reported_precisely(
    demo_db: Path, mode: str, expected: str
) -> None:
    r = _replay(demo_db, "1", agent=[*CHANGED, mode])
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert f"  {expected}" in lines
    assert lines[-1] == "DIVERGED: 1 difference(s), 0 replay problem(s)"


def test_new_request_gets_a_clear_error_and_is_reported(demo_db: Path) -> None:
    r = _replay(demo_db, "1", "--json", agent=[*CHANGED, "ask"])
    assert r.returncode == 1
    out = json.loads(r.stdout)
    (problem,) = out["problems"]
    assert problem["kind"] == "new_request"
    assert (
        "the agent asked fs/read_text_file, which the recording has no answer for"
        in (problem["message"])
    )
    assert problem["differences"][0]["path"] == "params.path"
    assert problem["differences"][0]["live"].endswith("/secrets.env")
    whats = [(d["where"], d["what"], d["replayed"]) for d in out["divergences"]]
    assert ("turn 1 (session 1)", "after message 3", ["asks fs/read_text_file"]) in whats
    # the rest of the session went as recorded
    assert [t["stop_reason"] for t in out["replayed"]["turns"]] == ["end_turn", "cancelled"]


def test_ignore_masks_a_volatile_path(demo_db: Path) -> None:
    r = _replay(demo_db, "1", "--ignore", "params.update.title", agent=[*CHANGED, "title"])
    assert r.returncode == 0, r.stdout
    assert r.stdout.splitlines()[-1] == "no divergence"


def test_a_jsonl_export_drives_the_agent(demo_db: Path, tmp_path: Path) -> None:
    export = tmp_path / "demo.jsonl"
    subprocess.run(
        [sys.executable, "-m", "acp_proxy", "export", "1", "--db", str(demo_db), "-o", str(export)],
        check=True,
        capture_output=True,
    )
    r = _replay(tmp_path / "ci.sqlite", str(export), agent=[*CHANGED, "stop"])
    assert r.returncode == 1
    assert "stop reason: recorded end_turn; replayed refusal" in r.stdout
    assert (tmp_path / "ci.sqlite").exists()


def test_missing_agent_command_is_a_usage_error(demo_db: Path) -> None:
    r = subprocess.run(replay_client_cmd(demo_db, "1"), capture_output=True, text=True)
    assert r.returncode == 2 and "no agent command given" in r.stderr


def test_an_agent_minting_fresh_session_ids_replays_clean(demo_db: Path) -> None:
    r = _replay(demo_db, "1", "--json", agent=[*CHANGED, "fresh"])
    out = json.loads(r.stdout)
    assert r.returncode == 0, out["divergences"] + out["problems"]
    assert out["divergences"] == [] and out["problems"] == []
    assert out["replayed"] == out["recorded"]
    assert len(out["recorded"]["turns"]) == 2
    assert len(out["recorded"]["turns"][0]["tool_calls"]) == 3
    assert out["recorded"]["turns"][0]["events"]  # the turn's messages were compared


def test_ignoring_session_ids_still_compares_the_tool_calls(demo_db: Path) -> None:
    r = _replay(demo_db, "1", "--ignore", "params.sessionId", agent=[*CHANGED, "fresh"])
    assert r.returncode == 0, r.stdout
    assert "compared 2 turn(s), 3 tool call(s)" in r.stdout


def test_a_comparison_of_nothing_is_an_error(tmp_path: Path) -> None:
    """A recording whose agent said nothing in any turn compares nothing: not a pass."""
    rec = tmp_path / "silent.jsonl"
    lines = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "method": "_x/ping", "params": {}},
    ]
    rec.write_text(
        "".join(
            json.dumps({"seq": i, "direction": "c2a", "t_ns": i, "text": json.dumps(v)}) + "\n"
            for i, v in enumerate(lines)
        )
    )
    silent = [sys.executable, "-c", "import sys; sys.stdin.read()"]
    r = _replay(tmp_path / "ci.sqlite", str(rec), "--timeout", "0.5", agent=silent)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "nothing to compare" in r.stdout


def test_the_report_names_the_file_it_was_given(demo_db: Path, tmp_path: Path) -> None:
    export = tmp_path / "given.jsonl"
    subprocess.run(
        [sys.executable, "-m", "acp_proxy", "export", "1", "--db", str(demo_db), "-o", str(export)],
        check=True,
        capture_output=True,
    )
    db = tmp_path / "ci.sqlite"
    r = _replay(db, str(export), "--json", agent=DEMO_AGENT)
    out = json.loads(r.stdout)
    assert out["recording"] == str(export)
    store = Store(db)
    try:
        assert store.capture(out["replay_capture"])["label"] == f"replay client of {export}"
    finally:
        store.close()


def test_an_agent_that_never_answers_fails_fast(demo_db: Path) -> None:
    mute = [sys.executable, "-c", "import sys; sys.stdin.read()"]
    r = _replay(demo_db, "1", "--json", "--timeout", "1", agent=mute)
    assert r.returncode == 1, r.stderr
    kinds = [p["kind"] for p in json.loads(r.stdout)["problems"]]
    assert kinds.count("wait_given_up") == 0, kinds  # it did not wait at every point
    assert "agent_silent" in kinds
    (silent,) = [p for p in json.loads(r.stdout)["problems"] if p["kind"] == "agent_silent"]
    assert "sent nothing" in silent["message"] and "initialize" in silent["message"]

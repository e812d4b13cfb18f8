"""The command line as a user runs it: real subprocesses, a real database."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from support.demo import demo_database
from support.proc import PROXY, peer, run_proxy

from acp_proxy.export.jsonl import read_jsonl
from acp_proxy.protocol.frames import Direction
from acp_proxy.store.reader import Store


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PROXY, *args], capture_output=True, text=True, check=check, timeout=120)


def test_demo_records_a_realistic_session(db: Path) -> None:
    out = cli("demo", "--db", str(db)).stdout
    assert f"into {db}" in out
    for needle in (
        "initialize",
        "session/new",
        "session/prompt",
        "agent_message_chunk",
        "agent_thought_chunk",
        "plan",
        "tool_call_update",
        "fs/read_text_file",
        "fs/write_text_file",
        "session/request_permission",
        "terminal/create",
        "terminal/output",
        "terminal/wait_for_exit",
        "terminal/release",
        "_demo.acp-proxy/stats",
        "_demo.acp-proxy/client_note",
        "session/cancel",
        "stopReason=cancelled",
    ):
        assert needle in out, needle
    rows = json.loads(cli("captures", "--db", str(db), "--json").stdout)
    assert len(rows) == 1
    c = rows[0]
    assert (c["client"], c["agent"], c["protocol_version"], c["status"]) == (
        "demo-client 1.0.0",
        "demo-agent 1.0.0",
        1,
        "exit 0",
    )
    assert c["messages"] > 40 and c["duration_s"] > 0


def test_demo_uses_the_default_database(tmp_path: Path) -> None:
    cli("demo")  # ACP_PROXY_DB points into tmp_path (conftest)
    assert (tmp_path / "default.sqlite").exists()


def test_show_and_export_round_trip_exact_bytes(db: Path, tmp_path: Path) -> None:
    demo_database(db)
    show = cli("show", "--db", str(db)).stdout.splitlines()
    assert show[0].startswith("capture 1  stdio")
    assert any("→ request" in line and "initialize [0]" in line for line in show)
    assert any("← response" in line and "ms, #" in line for line in show)  # latency shown
    out = tmp_path / "c.jsonl"
    cli("export", "1", "--db", str(db), "--format", "jsonl", "-o", str(out))
    frames = list(read_jsonl(out.read_bytes().splitlines()))
    store = Store(db)
    stored = list(store.frames(1))
    assert [f.raw for f in frames] == [s.raw for s in stored]
    assert [f.direction for f in frames] == [s.direction for s in stored]
    meta, first = (json.loads(x) for x in out.read_bytes().splitlines()[:2])
    assert meta["record"] == "capture" and meta["uid"] == first["capture"]
    assert first["method"] == "initialize" and first["kind"] == "request" and first["id"] == "0"
    store.close()


def test_export_of_invalid_utf8_uses_base64(db: Path, tmp_path: Path) -> None:
    src = tmp_path / "o.bin"
    src.write_bytes(b"\xff\xfe\n")
    run_proxy(db, peer("echo_agent.py", str(tmp_path / "i.bin"), str(src)))
    line = json.loads(cli("export", "--db", str(db)).stdout.splitlines()[1])
    assert line["base64"] == "//4=" and "text" not in line


def test_tail_follows_a_recording_in_progress(db: Path) -> None:
    tail = subprocess.Popen(
        [*PROXY, "tail", "-f", "--db", str(db), "--interval", "0.05"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        proc = subprocess.Popen(
            [*PROXY, "record", "--db", str(db), "--", *peer("lifecycle_agent.py", "trap")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stdin is not None
        proc.stdout.readline()
        assert tail.stdout is not None
        line = tail.stdout.readline()  # arrives while the agent is still running
        while " ── capture " in line:  # tail -f announces the capture starting first
            line = tail.stdout.readline()
        assert "ready" in line and "notification" in line
        assert proc.poll() is None
        proc.terminate()
        proc.wait(timeout=20)
    finally:
        tail.terminate()
        tail.wait(timeout=10)


def test_read_commands_work_during_a_recording(db: Path) -> None:
    proc = subprocess.Popen(
        [*PROXY, "record", "--db", str(db), "--", *peer("lifecycle_agent.py", "trap")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None
    proc.stdout.readline()
    time.sleep(0.2)
    rows = json.loads(cli("captures", "--db", str(db), "--json").stdout)
    assert rows[0]["status"] == "running" and rows[0]["messages"] == 1
    assert "ready" in cli("show", "--db", str(db)).stdout
    proc.terminate()
    proc.wait(timeout=20)


def test_bad_input_gets_one_clear_line(db: Path, tmp_path: Path) -> None:
    r = cli("show", "--db", str(tmp_path / "none.sqlite"), check=False)
    assert r.returncode != 0 and r.stderr.count("\n") == 1 and "no recordings database" in r.stderr
    demo_database(db)
    r = cli("show", "42", "--db", str(db), check=False)
    assert r.returncode == 2 and r.stderr.strip() == f"acp-proxy: error: no capture '42' in {db}"
    r = cli("record", "--db", str(db), check=False)
    assert r.returncode == 2 and "no agent command" in r.stderr
    r = cli("record", "--bogus", "--", "cat", check=False)
    assert r.returncode == 2 and r.stderr.strip() == (
        "acp-proxy: error: no such option: --bogus (the agent command goes after --)"
    )
    r = cli("captures", "--bogus", check=False)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    not_db = tmp_path / "text.sqlite"
    not_db.write_text("this is not a database\n" * 100)
    r = cli("captures", "--db", str(not_db), check=False)
    assert r.returncode == 3 and "Traceback" not in r.stderr, r.stderr


def test_stream_bytes_of_demo_are_newline_json(db: Path) -> None:
    demo_database(db)
    store = Store(db)
    for d in Direction:
        data = store.stream_bytes(1, d)
        assert data.endswith(b"\n")
        for line in data.splitlines():
            json.loads(line)
    store.close()


def test_tail_filters_and_json(db: Path) -> None:
    demo_database(db)
    out = cli("tail", "--db", str(db), "-n", "100", "--method", "terminal/*", "--json").stdout
    objs = [json.loads(line) for line in out.splitlines()]
    assert {o["method"] for o in objs} == {
        "terminal/create",
        "terminal/output",
        "terminal/wait_for_exit",
        "terminal/release",
    }
    assert {o["kind"] for o in objs} == {"request", "response"}
    text = cli("tail", "--db", str(db), "-n", "2", "--kind", "request", "--direction", "c2a")
    lines = text.stdout.splitlines()
    assert len(lines) == 2 and all("→ request" in line for line in lines)
    updates = cli("tail", "--db", str(db), "-n", "1000", "--update", "tool_call*").stdout
    assert updates and all("tool_call" in line for line in updates.splitlines())


def test_show_filters_frames(db: Path) -> None:
    demo_database(db)
    lines = cli("show", "--db", str(db), "--method", "fs/*").stdout.splitlines()
    frames = [line for line in lines if " #" in line and "fs/" in line]
    assert len(frames) == 4  # read and write, each a request and its response
    assert not [line for line in lines if "session/prompt" in line]
    anomalous = cli("show", "--db", str(db), "--anomalous", "--json").stdout
    assert json.loads(anomalous)["frames"] == []  # the demo is clean


def test_every_command_runs_under_python_dash_m() -> None:
    for command in ("tools", "terminals", "diffs", "ws", "replay"):
        assert cli(command, "-h").returncode == 0

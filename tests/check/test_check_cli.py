"""``acp-proxy check`` as a user runs it: real recordings, exit codes, every format."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from support.hostile import EVIL, record_script
from support.proc import PROXY

from acp_proxy.check.core.rules import RULES

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
INIT_OK = {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}}
NEW = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "session/new",
    "params": {"cwd": "/work", "mcpServers": []},
}
NEW_OK = {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s1"}}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PROXY, "check", *args], capture_output=True, text=True, timeout=120)


@pytest.fixture
def bad_db(tmp_path: Path, db: Path) -> Path:
    """A real recording: the agent logs to stdout (with terminal controls) and answers a
    request nobody sent."""
    steps = [
        ("c2a", INIT),
        ("a2c", INIT_OK),
        ("c2a", NEW),
        ("a2c", NEW_OK),
        ("a2c", f"loading model {EVIL}"),
        ("a2c", {"jsonrpc": "2.0", "id": 42, "result": {}}),
        (
            "a2c",
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {
                    "sessionId": "s1",
                    "update": {
                        "sessionUpdate": "agent_message_chunk",
                        "content": {"type": "text", "text": "x"},
                    },
                },
            },
        ),
    ]
    record_script(db, tmp_path, steps)
    return db


def test_text_report_groups_by_rule_and_exits_1(bad_db: Path) -> None:
    proc = run("--db", str(bad_db))
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    assert "error framing.not-json ×1" in out and "error rpc.unpaired-response ×1" in out
    assert "seq 4 [agent]" in out and "seq 5 [agent]" in out
    assert "https://agentclientprotocol.com/protocol/v1/transports" in out
    assert "\x1b" not in out and "\x9b" not in out and "\\x1b]52" in out
    assert "2 errors, 0 warnings" in out


def test_side_and_ignore_decide_the_exit_code(bad_db: Path) -> None:
    assert run("--db", str(bad_db), "--side", "client").returncode == 0
    assert run("--db", str(bad_db), "--ignore", "framing.*").returncode == 1
    proc = run("--db", str(bad_db), "--ignore", "framing.*,rpc.unpaired-response")
    assert proc.returncode == 0 and "no findings" in proc.stdout


def test_json_report(bad_db: Path) -> None:
    proc = run("--db", str(bad_db), "--format", "json")
    doc = json.loads(proc.stdout)
    (cap,) = doc["captures"]
    assert cap["protocol_version"] == 1 and cap["frames"] == 7
    assert [(f["rule"], f["side"], f["seq"]) for f in cap["findings"]] == [
        ("framing.not-json", "agent", 4),
        ("rpc.unpaired-response", "agent", 5),
    ]
    assert doc["counts"] == {"error": 2, "warning": 0, "info": 0}
    assert "\x1b" not in proc.stdout and "\x9b" not in proc.stdout


def test_junit_report_fails_the_broken_rules(bad_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "check.xml"
    proc = run("--db", str(bad_db), "--format", "junit", "-o", str(out))
    assert proc.returncode == 1 and "wrote junit" in proc.stderr
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    root = ET.parse(out).getroot()
    suite = root.find("testsuite")
    assert suite is not None and suite.get("tests") == str(len(RULES))
    failed = {c.get("name") for c in suite.iter("testcase") if c.find("failure") is not None}
    assert failed == {"framing.not-json", "rpc.unpaired-response"}


def test_sarif_report(bad_db: Path) -> None:
    doc = json.loads(run("--db", str(bad_db), "--format", "sarif").stdout)
    assert doc["version"] == "2.1.0"
    run_ = doc["runs"][0]
    assert {r["id"] for r in run_["tool"]["driver"]["rules"]} == set(RULES)
    assert [(r["ruleId"], r["level"]) for r in run_["results"]] == [
        ("framing.not-json", "error"),
        ("rpc.unpaired-response", "error"),
    ]


def test_a_jsonl_export_checks_the_same(bad_db: Path, tmp_path: Path) -> None:
    export = tmp_path / "e.jsonl"
    subprocess.run([*PROXY, "export", "--db", str(bad_db), "-o", str(export)], check=True)
    a = json.loads(run("--db", str(bad_db), "--format", "json").stdout)
    b = json.loads(run(str(export), "--format", "json").stdout)
    assert [c["findings"] for c in a["captures"]] == [c["findings"] for c in b["captures"]]


def test_all_checks_every_capture(bad_db: Path, tmp_path: Path) -> None:
    steps = [("c2a", INIT), ("a2c", INIT_OK), ("c2a", NEW), ("a2c", NEW_OK)]
    record_script(bad_db, tmp_path, steps)
    doc = json.loads(run("--db", str(bad_db), "--all", "--format", "json").stdout)
    assert [len(c["findings"]) for c in doc["captures"]] == [2, 0]
    assert run("--db", str(bad_db), "2").returncode == 0
    assert run("--db", str(bad_db), "1").returncode == 1


def test_rules_lists_every_rule() -> None:
    proc = run("--rules")
    assert proc.returncode == 0
    for rule_id in RULES:
        assert rule_id in proc.stdout
    rows = json.loads(run("--rules", "--json").stdout)
    assert [r["id"] for r in rows] == list(RULES)
    assert all(r["spec"].startswith("https://") for r in rows)


@pytest.mark.parametrize(
    ("args", "code", "text"),
    [
        (["--ignore", "no.such-rule"], 2, "no such rule"),
        (["--json"], 2, "--json goes with --rules"),
        (["--all", "3"], 2, "--all checks every capture"),
        (["999"], 2, "no capture '999'"),
    ],
)
def test_bad_usage_is_one_line(bad_db: Path, args: list[str], code: int, text: str) -> None:
    proc = run("--db", str(bad_db), *args)
    assert proc.returncode == code and text in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_missing_database_and_bad_jsonl(tmp_path: Path) -> None:
    proc = run("--db", str(tmp_path / "none.sqlite"))
    assert proc.returncode == 3 and len(proc.stderr.strip().splitlines()) == 1
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"seq": 0}\nnot json\n')
    proc = run(str(bad))
    assert proc.returncode == 2 and "bad.jsonl:1" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_show_check_marks_the_frames_with_findings(bad_db: Path) -> None:
    def show(*extra: str) -> str:
        proc = subprocess.run(
            [*PROXY, "show", "--db", str(bad_db), *extra],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    assert "⚠" not in show()
    lines = show("--check").splitlines()
    marks = [(lines[i - 1], line) for i, line in enumerate(lines) if "⚠" in line]
    assert len(marks) == 2
    assert "#4" in marks[0][0] and "error framing.not-json [agent]" in marks[0][1]
    assert "#5" in marks[1][0] and "rpc.unpaired-response" in marks[1][1]
    doc = json.loads(show("--check", "--json"))
    assert [f["rule"] for f in doc["frames"][5]["findings"]] == ["rpc.unpaired-response"]
    assert doc["frames"][0]["findings"] == []


def test_the_html_report_marks_findings(bad_db: Path, tmp_path: Path) -> None:
    page = tmp_path / "c.html"
    subprocess.run(
        [*PROXY, "export", "--db", str(bad_db), "--format", "html", "-o", str(page)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    text = page.read_text()
    assert "<h2>Conformance</h2>" in text and text.count("⚠") == 2
    assert "<code>framing.not-json</code>" in text
    record_script(bad_db, tmp_path, [("c2a", INIT), ("a2c", INIT_OK)])
    subprocess.run(
        [*PROXY, "export", "--db", str(bad_db), "--format", "html", "-o", str(page)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    assert "Conformance" not in page.read_text()


def test_record_check_prints_findings_on_stderr_and_forwards_the_same_bytes(
    tmp_path: Path,
) -> None:
    steps = [
        ("c2a", INIT),
        ("a2c", INIT_OK),
        ("c2a", NEW),
        ("a2c", NEW_OK),
        ("a2c", f"loading model {EVIL}"),
        (
            "c2a",
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "session/prompt",
                "params": {"sessionId": "nope", "prompt": []},
            },
        ),
        ("a2c", {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}),
        ("c2a", {"jsonrpc": "2.0", "id": 3, "method": "_x/never", "params": {}}),
    ]
    plain = record_script(tmp_path / "a.sqlite", tmp_path, steps)
    checked = record_script(tmp_path / "b.sqlite", tmp_path, steps, extra=["--check"])
    assert checked.stdout == plain.stdout and checked.returncode == plain.returncode == 0
    err = checked.stderr.decode()
    assert "check:" not in plain.stderr.decode()
    assert "acp-proxy: check: error framing.not-json seq 4 [agent]" in err
    assert "acp-proxy: check: error acp.unknown-session seq 5 [client]" in err
    assert "acp-proxy: check: error rpc.unanswered seq 7 [agent]" in err  # at the end
    assert "\x1b" not in err and "\\x1b]52" in err


def test_a_file_of_several_captures_is_checked_capture_by_capture(tmp_path: Path) -> None:
    from support.paths import TESTS

    samples = sorted((TESTS.parent / "recordings").glob("*.jsonl"))
    both = tmp_path / "both.jsonl"
    both.write_bytes(b"".join(p.read_bytes() for p in samples))
    doc = json.loads(run(str(both), "--format", "json").stdout)
    sizes = [  # frame lines: an export also has its metadata, stderr and events
        sum(
            1
            for line in p.read_bytes().splitlines()
            if line.strip() and b'"record"' not in line[:12]
        )
        for p in samples
    ]
    assert [c["frames"] for c in doc["captures"]] == sizes and len(sizes) >= 2


def test_a_hostile_recording_is_reported_inert_in_every_format(tmp_path: Path, db: Path) -> None:
    from support.hostile import hostile_session

    record_script(db, tmp_path, hostile_session(str(tmp_path)))
    out = {}
    for fmt in ("text", "json", "junit", "sarif"):
        proc = run("--db", str(db), "--format", fmt)
        assert proc.returncode in (0, 1) and proc.stderr == "", proc.stderr
        for control in ("\x1b", "\x07", "\x9b", "\x9d", "\x85"):
            assert control not in proc.stdout, (fmt, control)
        out[fmt] = proc.stdout
    report = json.loads(out["json"])
    rules = {f["rule"] for f in report["captures"][0]["findings"]}
    assert "framing.not-json" in rules  # its line that is not JSON at all
    ET.fromstring(out["junit"])


def test_a_rule_found_in_many_frames_is_counted_whole_and_shown_in_part(
    tmp_path: Path, db: Path
) -> None:
    # 50 answers to requests nobody sent (the agent's) and 30 calls of a method ACP does
    # not define (the client's): the text report shows the first 20 of a rule and counts
    # every one, per side, as the JSON report lists them
    steps: list[tuple[str, object]] = [
        ("c2a", INIT),
        ("a2c", INIT_OK),
        ("c2a", NEW),
        ("a2c", NEW_OK),
    ]
    steps += [("a2c", {"jsonrpc": "2.0", "id": 100 + i, "result": {}}) for i in range(50)]
    steps += [("c2a", {"jsonrpc": "2.0", "method": "no/such", "params": {}}) for _ in range(30)]
    record_script(db, tmp_path, steps)
    listed = json.loads(run("--db", str(db), "--format", "json").stdout)["captures"][0]
    by_rule: dict[tuple[str, str], int] = {}
    for f in listed["findings"]:
        by_rule[(f["rule"], f["side"])] = by_rule.get((f["rule"], f["side"]), 0) + 1
    assert by_rule[("rpc.unpaired-response", "agent")] == 50
    client = {rule: n for (rule, side), n in by_rule.items() if side == "client"}
    assert sum(client.values()) >= 30
    for side, expect in (("agent", {"rpc.unpaired-response": 50}), ("client", client)):
        out = run("--db", str(db), "--side", side).stdout
        for rule, n in expect.items():
            assert f"{rule} ×{n}:" in out, out
            block = re.split(r"\n(?:  \S|\n)", out.split(f"{rule} ×{n}:")[1])[0]
            assert block.count(f"[{side}]") == min(n, 20)
            assert (f"… and {n - 20} more" in block) == (n > 20)
        other = "client" if side == "agent" else "agent"
        assert f"[{other}]" not in out
        errors = sum(n for r, n in expect.items() if RULES[r].severity == "error")
        assert f"\n{errors} errors," in out

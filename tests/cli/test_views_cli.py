"""The reconstruction commands end to end: tools, terminals, diffs, show views, exports."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from support.paths import DATA, ROOT

from acp_proxy.cli import main

DEMO = str(ROOT / "recordings" / "demo-v1.jsonl")
V2 = str(ROOT / "tests" / "data" / "reconstruct" / "v2-terminals.jsonl")


def _run(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_terminals_json_contract() -> None:
    terms = json.loads(_run("terminals", V2, "--json"))
    required = {
        "terminalId",
        "sessionId",
        "command",
        "cwd",
        "exitStatus",
        "output_base64",
        "text",
        "screen",
        "toolCallIds",
    }
    for t in terms:
        assert required <= t.keys()
        assert t["exitStatus"] is None or set(t["exitStatus"]) == {"exitCode", "signal"}
        assert base64.b64decode(t["output_base64"]).decode("utf-8", "replace") == t["text"]
        assert isinstance(t["screen"], list)


def test_diffs_json_contract() -> None:
    required = {
        "path",
        "operation",
        "oldPath",
        "toolCallId",
        "sessionId",
        "seq",
        "fileType",
        "mimeType",
        "patch",
        "source",
    }
    for capture in (DEMO, str(ROOT / "tests" / "data" / "reconstruct" / "v2-diffs.jsonl")):
        rows = json.loads(_run("diffs", capture, "--json"))
        assert rows and all(required <= row.keys() for row in rows)


def test_tools_text_and_state_at_a_seq() -> None:
    out = _run("tools", DEMO)
    assert "call_test  execute  completed  'Run the tests'" in out
    early = json.loads(_run("tools", DEMO, "--json", "--at", "12"))
    assert [t["toolCallId"] for t in early] == ["call_read", "call_edit"]
    assert early[1]["status"] == "in_progress"


def test_terminals_text_shows_the_rendered_screen() -> None:
    out = _run("terminals", DEMO)
    assert "│ collecting 3 tests\n" in out and "│ 3 passed in 0.03s\n" in out
    screen = [line for line in out.splitlines() if line.startswith("│")]
    assert not any("running test" in line for line in screen)  # overwritten by \r


def test_show_views(tmp_path: Path) -> None:
    db = tmp_path / "demo.sqlite"
    subprocess.run(
        [sys.executable, "-m", "acp_proxy", "demo", "--db", str(db)],
        check=True,
        capture_output=True,
    )
    turns = json.loads(_run("show", "--db", str(db), "--view", "turns", "--json"))
    assert [t["stopReason"] for t in turns] == ["end_turn", "cancelled"]
    assert "approved" in _run("show", "--db", str(db), "--view", "permissions")
    frames = _run("show", "--db", str(db), "--at", "3")
    assert "#3 " in frames and "#4 " not in frames
    assert "turn 1  #4" in _run("show", DEMO, "--view", "turns")
    assert "mode    code" in _run("show", "--db", str(db), "--view", "sessions")
    files = _run("show", DEMO, "--view", "files")
    assert "#13    write     fs_write" in files and "start   39 chars, 4 lines" in files


def test_export_asciicast_and_patch(tmp_path: Path) -> None:
    cast = _run("export", V2, "--format", "asciicast", "--terminal", "term_1")
    header = json.loads(cast.splitlines()[0])
    assert header["version"] == 2 and header["width"] == 20
    out = tmp_path / "demo.cast"
    _run("export", DEMO, "--format", "asciicast", "-o", str(out))
    assert out.read_text().startswith('{"version":2')
    patch = _run("export", DEMO, "--format", "patch")
    assert patch.startswith("diff --git a/config.json b/config.json\n")


def test_bad_input_is_one_line_and_a_non_zero_exit() -> None:
    result = CliRunner().invoke(main, ["export", V2, "--format", "asciicast"])
    assert result.exit_code == 2
    assert "give --terminal ID (terminals in this capture: term_1, term_2, term_3)" in result.output
    result = CliRunner().invoke(main, ["export", V2, "--format", "asciicast", "--terminal", "x"])
    assert result.exit_code == 2 and "no terminal 'x'" in result.output
    result = CliRunner().invoke(main, ["tools", DEMO, "--at", "-1"])
    assert result.exit_code == 2
    bad = DATA / "reconstruct" / "expected" / "v2-diffs.json"
    result = CliRunner().invoke(main, ["tools", str(bad).replace(".json", ".jsonl.missing")])
    assert result.exit_code != 0 and "Traceback" not in result.output

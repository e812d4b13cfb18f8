"""``acp-proxy diff A B``: two sessions compared turn by turn, on the replay comparison.

Two recordings of the demo (their own workspaces, timings and process ids) are the same
session; a deliberately changed agent differs in exactly what was changed, in the right
turn, and diff exits 1.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from support.paths import DATA
from support.proc import PROXY, wait_recorded

from acp_proxy.demo import client, proxy_argv, run_demo
from acp_proxy.replay.core.report import word_diff

CHANGED = [sys.executable, str(DATA / "share" / "diff_agent.py")]
MODES = ("answer", "file", "terminal", "title")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PROXY, *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Captures 1 and 2: the demo twice; then one per changed mode (3, 4, …)."""
    db = tmp_path_factory.mktemp("diff") / "runs.sqlite"
    run_demo(db)
    run_demo(db)
    for mode in MODES:
        with tempfile.TemporaryDirectory(prefix="acp-diff-") as tmp:
            client.run(proxy_argv(db, *CHANGED, mode, label=mode), Path(tmp))
    wait_recorded(db)
    return db


def _capture(mode: str) -> str:
    return str(3 + MODES.index(mode))


def test_the_demo_against_itself_has_no_difference(runs: Path) -> None:
    r = cli("diff", "--db", str(runs), "1", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == [
        "compared 2 turn(s) of 1 (A) and 2 (B)",
        "no differences between 1 and 2",
    ]


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        (
            "answer",
            [
                "  turn 1 (session 1) · answer: A Debug mode is on and all 3 tests pass. I "
                "changed `config.json` only.; B Debug mode is on and all 3 tests fail. I changed "
                "`config.json` only.",
                "    Debug mode is on and all 3 tests [-pass.-]{+fail.+} I changed "
                "`config.json` only.",
            ],
        ),
        (
            "title",
            ["  turn 1 (session 1) · tool call 3 title: A Run the tests; B Run the test suite"],
        ),
        (
            "terminal",
            [
                "  turn 1 (session 1) · terminal 1 command: A",
                "  turn 1 (session 1) · terminal 1 exit: A 0; B 3",
                "  turn 1 (session 1) · terminal 1 output: A",
            ],
        ),
        ("file", ['    -  "name": "demo"', '    +  "name": "other"']),
    ],
)
def test_each_change_is_reported_in_its_turn(runs: Path, mode: str, expected: list[str]) -> None:
    r = cli("diff", "--db", str(runs), "1", _capture(mode))
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    for want in expected:
        assert any(line.startswith(want) for line in lines), (want, lines)
    assert "turn 2" not in r.stdout  # the second turn went as recorded


def test_json_for_scripts_and_a_jsonl_side(runs: Path, tmp_path: Path) -> None:
    export = tmp_path / "a.jsonl"
    assert cli("export", "--db", str(runs), "1", "-o", str(export)).returncode == 0
    r = cli("diff", "--db", str(runs), str(export), _capture("title"), "--json", "--timing")
    assert r.returncode == 1
    out = json.loads(r.stdout)
    assert out["same"] is False
    assert [(d["where"], d["what"]) for d in out["differences"]] == [
        ("turn 1 (session 1)", "tool call 3 title")
    ]
    assert any(t["what"] == "session/prompt latency ms" for t in out["timing"])
    first = out["summary"]["a"]["turns"][0]
    assert first["prompt"].startswith("Turn on debug mode") and first["terminals"]


def test_ignore_masks_what_changed(runs: Path) -> None:
    r = cli("diff", "--db", str(runs), "1", _capture("title"), "--ignore", "params.update.title")
    assert r.returncode == 0, r.stdout


def test_timing_is_shown_but_not_a_difference(runs: Path) -> None:
    r = cli("diff", "--db", str(runs), "1", "2", "--timing")
    assert r.returncode == 0
    assert "timing (not counted as a difference):" in r.stdout
    assert "turn 1 (session 1) · first output ms: A " in r.stdout


def test_bad_sides_are_one_line_errors(runs: Path, tmp_path: Path) -> None:
    r = cli("diff", "--db", str(runs), "1", "99")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no capture '99'" in r.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text("nope\n")
    r = cli("diff", "--db", str(runs), str(bad), "1")
    assert r.returncode == 2 and "line 1" in r.stderr and "Traceback" not in r.stderr


def test_word_diff() -> None:
    assert word_diff("a b c", "a x c") == "a [-b-]{+x+} c"
    assert word_diff("", "new") == "{+new+}"


def _frames(*messages: tuple[str, dict[str, object]]) -> list[object]:
    from acp_proxy.protocol.frames import Direction, Frame

    return [
        Frame(i, Direction(d), i * 1_000_000, json.dumps({"jsonrpc": "2.0", **m}).encode())
        for i, (d, m) in enumerate(messages)
    ]


def _session(version: int, outcome: str, sid: str) -> list[object]:
    ask = {"sessionId": sid, "toolCall": {"title": "Run"}, "options": [{"kind": "allow_once"}]}
    return _frames(
        ("c2a", {"id": 0, "method": "initialize", "params": {"protocolVersion": version}}),
        ("a2c", {"id": 0, "result": {"protocolVersion": version}}),
        ("c2a", {"id": 1, "method": "session/prompt", "params": {"sessionId": sid, "prompt": []}}),
        ("a2c", {"id": 5, "method": "session/request_permission", "params": ask}),
        ("c2a", {"id": 5, "result": {"outcome": {"outcome": outcome, "optionId": "a"}}}),
        ("a2c", {"id": 1, "result": {"stopReason": "end_turn"}}),
    )


def test_permissions_and_initialize_are_compared() -> None:
    from acp_proxy.replay.core.compare import compare, summarise_run
    from acp_proxy.replay.core.mapper import Mapper
    from acp_proxy.replay.core.match import parse_messages

    a = summarise_run(parse_messages(_session(1, "selected", "s1")), detail=True)  # type: ignore[arg-type]
    mapper = Mapper()
    mapper.add_session("s1", "s1")
    same = summarise_run(parse_messages(_session(1, "selected", "s1")), mapper=mapper, detail=True)  # type: ignore[arg-type]
    assert compare(a, same) == []
    b = summarise_run(parse_messages(_session(2, "cancelled", "s1")), mapper=mapper, detail=True)  # type: ignore[arg-type]
    found = {(d.where, d.what): (d.recorded, d.replayed) for d in compare(a, b)}
    assert found[("turn 1 (session 1)", "permission request 1 outcome")] == (
        "selected a",
        "cancelled a",
    )
    assert found[("setup", "initialize (agent)")][1]["protocolVersion"] == 2
    assert ("setup", "initialize (client)") in found
    # without detail (replay client), the same runs compare as before: no text facets
    plain = compare(
        summarise_run(parse_messages(_session(1, "selected", "s1"))),  # type: ignore[arg-type]
        summarise_run(parse_messages(_session(2, "cancelled", "s1"))),
    )  # type: ignore[arg-type]
    assert plain == []


def test_other_session_ids_and_workspaces_are_not_differences(runs: Path, tmp_path: Path) -> None:
    export = tmp_path / "b.jsonl"
    assert cli("export", "--db", str(runs), "2", "-o", str(export)).returncode == 0
    lines = []
    for line in export.read_text().splitlines():
        obj = json.loads(line)
        if "text" in obj:  # frames and stderr; the metadata line has none
            obj["text"] = obj["text"].replace("sess_demo_1", "sess-from-elsewhere-42")
        lines.append(json.dumps(obj))
    export.write_text("\n".join(lines) + "\n")
    r = cli("diff", "--db", str(runs), "1", str(export))
    assert r.returncode == 0, r.stdout
    r = cli("diff", "--db", str(runs), str(export), _capture("title"))
    assert r.returncode == 1 and "turn 1 (session 1) · tool call 3 title" in r.stdout
    assert "setup" not in r.stdout, r.stdout

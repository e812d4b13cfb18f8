"""The pytest plugin, through pytest's own pytester: a test project that uses only the
documented fixtures passes against the demo agent, fails with the divergence against a
changed one, says clearly when the recording is missing, re-records with --acp-update, and
reads what it recorded through the Python API."""

from __future__ import annotations

import shutil

import pytest
from support.paths import ROOT

import acp_proxy

pytest_plugins = ["pytester"]

DEMO = ROOT / "recordings" / "demo-v1.jsonl"
CHANGED = ROOT / "tests" / "data" / "replay" / "changed_agent.py"


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copy(DEMO, pytester.path / "demo.jsonl")
    pytester.makeconftest(
        f"""
import sys
DEMO_AGENT = [sys.executable, "-m", "acp_proxy.demo.agent"]
CHANGED = [sys.executable, {str(CHANGED)!r}, "status"]
"""
    )
    return pytester


def run(p: pytest.Pytester, *args: str) -> pytest.RunResult:
    env_path = str(ROOT)  # the changed agent imports acp_proxy from the repository
    p._monkeypatch.setenv("PYTHONPATH", env_path)
    return p.runpytest_subprocess("-p", "no:cacheprovider", *args, timeout=240)


def test_a_passing_agent_passes(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
from conftest import DEMO_AGENT

def test_demo(acp_replay):
    outcome = acp_replay("demo.jsonl", DEMO_AGENT)
    assert not outcome.diverged
"""
    )
    run(project).assert_outcomes(passed=1)


def test_a_diverging_agent_fails_with_the_report(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
from conftest import CHANGED

def test_changed(acp_replay):
    acp_replay("demo.jsonl", CHANGED)
"""
    )
    result = run(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*tool call 3 'Run the tests' statuses: recorded pending → in_progress → completed;"
         " replayed pending → in_progress → failed*", "*DIVERGED: 1 difference(s)*"]
    )  # fmt: skip


def test_a_missing_recording_is_a_clear_failure(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
from conftest import DEMO_AGENT

def test_missing(acp_replay):
    acp_replay("nowhere.jsonl", DEMO_AGENT)
"""
    )
    result = run(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*acp_replay: no recording at *nowhere.jsonl*"])
    assert "Traceback" not in result.stdout.str()


def test_update_rerecords_and_the_next_run_compares_with_it(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
from conftest import CHANGED

def test_changed(acp_replay):
    acp_replay("demo.jsonl", CHANGED)
"""
    )
    before = (project.path / "demo.jsonl").read_bytes()
    run(project, "--acp-update").assert_outcomes(passed=1)
    after = (project.path / "demo.jsonl").read_bytes()
    assert after != before
    with acp_proxy.open(project.path / "demo.jsonl") as rec:  # the changed agent's run
        assert rec.latest().tool_calls()[-1].status == "failed"
    run(project).assert_outcomes(passed=1)  # the changed agent matches its own recording


def test_acp_record_gives_the_capture_through_the_api(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
import subprocess, sys
from conftest import DEMO_AGENT

def test_record(acp_record, tmp_path):
    client = [sys.executable, "-m", "acp_proxy.demo.client", "--workspace", str(tmp_path / "ws"),
              "--", *acp_record.argv(DEMO_AGENT)]
    assert subprocess.run(client, capture_output=True, timeout=120).returncode == 0
    cap = acp_record.capture()
    assert cap.status == "exit 0" and cap.protocol_version == 1
    assert [t.stop_reason for t in cap.turns()] == ["end_turn", "cancelled"]
    assert [t.status for t in cap.tool_calls()] == ["completed"] * 3
    assert cap.diffs()[-1].applies == cap.diffs()[0].seq
    assert [f for f in cap.findings() if f.severity == "error"] == []
"""
    )
    run(project).assert_outcomes(passed=1)


def test_a_capture_of_a_database_is_a_recording_too(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
import subprocess, sys
from conftest import DEMO_AGENT

def test_demo(acp_replay, tmp_path):
    db = tmp_path / "rec.sqlite"
    subprocess.run([sys.executable, "-m", "acp_proxy", "import", "demo.jsonl", "--db", str(db)],
                   check=True, capture_output=True)
    assert not acp_replay(f"{db}#1", DEMO_AGENT).diverged
"""
    )
    run(project).assert_outcomes(passed=1)

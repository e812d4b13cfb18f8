"""The checked-in sample capture as a regression gate, the way CI would use it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from support.paths import RECORDINGS
from support.replay import DEMO_AGENT, DEMO_CLIENT, replay_agent_cmd, replay_client_cmd

DEMO = RECORDINGS / "demo-v1.jsonl"

pytestmark = pytest.mark.skipif(not DEMO.exists(), reason="no recordings/demo-v1.jsonl")


def test_the_demo_agent_still_behaves_as_recorded(tmp_path: Path) -> None:
    r = subprocess.run(
        [
            *replay_client_cmd(tmp_path / "ci.sqlite", str(DEMO), "--ignore", "params.command"),
            "--",
            *DEMO_AGENT,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1] == "no divergence"


def test_the_demo_client_runs_against_the_sample(tmp_path: Path) -> None:
    r = subprocess.run(
        [
            *DEMO_CLIENT,
            "--workspace",
            str(tmp_path),
            "--",
            *replay_agent_cmd(tmp_path / "unused.sqlite", str(DEMO)),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "turn 2 ended: cancelled" in r.stderr
    assert '"debug": true' in (tmp_path / "config.json").read_text()

"""The checked-in sample capture as a regression gate, the way CI would use it."""

from __future__ import annotations

import json
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
            *replay_client_cmd(tmp_path / "ci.sqlite", str(DEMO)),
            "--",
            *DEMO_AGENT,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1] == "no divergence"


def test_the_sample_holds_no_path_of_the_machine_it_was_made_on() -> None:
    text = DEMO.read_text()
    for needle in ("/bin/python", "/venv", "/home/", "/work/", "/root/"):
        assert needle not in text, needle
    meta = json.loads(text.splitlines()[0])
    assert meta["record"] == "capture" and meta["agent_command"][0] == "python3"


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

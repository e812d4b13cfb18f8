"""``replay agent --timing original`` keeps recorded gaps, up to ``--max-gap``, and says so;
``--keep-serving`` needs ``--listen``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from support.replay import replay_agent_cmd

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
ANSWER = {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}}


def _recording(tmp_path: Path, gap_ns: int) -> Path:
    path = tmp_path / "slow.jsonl"
    frames = [("c2a", 1000, INIT), ("a2c", 1000 + gap_ns, ANSWER)]
    path.write_text(
        "".join(
            json.dumps({"seq": i, "direction": d, "t_ns": t, "text": json.dumps(v)}) + "\n"
            for i, (d, t, v) in enumerate(frames)
        )
    )
    return path


def test_a_huge_recorded_gap_is_capped_and_said(tmp_path: Path) -> None:
    rec = _recording(tmp_path, 10**17)  # three years
    r = subprocess.run(
        [
            *replay_agent_cmd(
                tmp_path / "x.sqlite", str(rec), "--timing", "original", "--max-gap", "0.2"
            )
        ],
        input=json.dumps(INIT) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert json.loads(r.stdout.splitlines()[0])["result"] == {"protocolVersion": 1}
    assert "capped" in r.stderr and "--max-gap" in r.stderr, r.stderr


def test_the_default_max_gap_is_a_few_seconds(tmp_path: Path) -> None:
    r = subprocess.run(
        [*replay_agent_cmd(tmp_path / "x.sqlite"), "--help"], capture_output=True, text=True
    )
    assert "--max-gap" in r.stdout and "[default: 5" in r.stdout


def test_keep_serving_without_listen_is_refused(tmp_path: Path) -> None:
    rec = _recording(tmp_path, 1)
    r = subprocess.run(
        [*replay_agent_cmd(tmp_path / "x.sqlite", str(rec), "--keep-serving")],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2
    assert r.stderr.strip() == "acp-proxy: error: --keep-serving goes with --listen"

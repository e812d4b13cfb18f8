"""No false positives: captures of the official SDKs as both peers, through the real proxy.

Python SDK ⇄ Python SDK (v1), TypeScript SDK ⇄ TypeScript SDK (v1 and v2), TypeScript
client ⇄ Python agent, the bundled demo and the samples in ``recordings/`` must give no
error-level finding: such a finding on the official SDKs is a bug in the checker. The
capture is checked twice, from the database and from its ``jsonl`` export, with the same
findings.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.paths import TESTS
from support.proc import PROXY, peer, wait_recorded
from support.sdk import sdk_session

pytestmark = pytest.mark.interop

REPO = TESTS.parent
NPM = TESTS / "npm"
TS_AGENT = ["node", str(NPM / "agent.mjs")]
TS_CLIENT = ["node", str(NPM / "client.mjs")]


def check(*args: str) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run(
        [*PROXY, "check", "--format", "json", *args], capture_output=True, timeout=120
    )
    assert proc.returncode in (0, 1), proc.stderr.decode(errors="replace")
    return proc.returncode, json.loads(proc.stdout)


def errors(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for c in report["captures"] for f in c["findings"] if f["severity"] == "error"]


def assert_clean(db: Path, tmp_path: Path, version: int) -> dict[str, Any]:
    code, report = check("--db", str(db))
    assert errors(report) == [] and code == 0
    assert report["captures"][0]["protocol_version"] == version
    assert report["captures"][0]["frames"] > 5
    export = tmp_path / "capture.jsonl"
    subprocess.run([*PROXY, "export", "--db", str(db), "-o", str(export)], check=True)
    _, again = check(str(export))
    assert [c["findings"] for c in again["captures"]] == [c["findings"] for c in report["captures"]]
    return report


def _node() -> None:
    if shutil.which("node") is None or not (NPM / "node_modules").is_dir():
        pytest.fail("the TypeScript SDK peers need node and `npm ci --prefix tests/npm`")


async def test_python_sdk_peers_give_no_error(tmp_path: Path, db: Path) -> None:
    agent = [*PROXY, "record", "--db", str(db), "--", *peer("sdk_agent.py")]
    (tmp_path / "notes.txt").write_text("notes\n")
    await sdk_session(agent, tmp_path)
    wait_recorded(db)
    report = assert_clean(db, tmp_path, 1)
    assert report["counts"]["warning"] == 0


@pytest.mark.parametrize("v2", [False, True], ids=["v1", "v2"])
def test_typescript_sdk_peers_give_no_error(tmp_path: Path, db: Path, v2: bool) -> None:
    _node()
    flag = ["--v2"] if v2 else []
    agent = [*PROXY, "record", "--db", str(db), "--", *TS_AGENT, *flag]
    proc = subprocess.run(
        [*TS_CLIENT, *flag, *agent], cwd=tmp_path, capture_output=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    wait_recorded(db)
    report = assert_clean(db, tmp_path, 2 if v2 else 1)
    assert report["counts"]["warning"] == 0


def test_typescript_client_with_python_agent_gives_no_error(tmp_path: Path, db: Path) -> None:
    _node()
    (tmp_path / "notes.txt").write_text("notes\n")
    agent = [*PROXY, "record", "--db", str(db), "--", *peer("sdk_agent.py")]
    proc = subprocess.run([*TS_CLIENT, *agent], cwd=tmp_path, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    wait_recorded(db)
    assert_clean(db, tmp_path, 1)


def test_the_demo_gives_no_error(tmp_path: Path, db: Path) -> None:
    subprocess.run([*PROXY, "demo", "--db", str(db)], check=True, capture_output=True, timeout=120)
    wait_recorded(db)
    assert_clean(db, tmp_path, 1)


@pytest.mark.parametrize(
    "sample", sorted((REPO / "recordings").glob("*.jsonl")), ids=lambda p: p.name
)
def test_recorded_samples_give_no_error(sample: Path) -> None:
    code, report = check(str(sample))
    assert errors(report) == [] and code == 0
    assert report["captures"] and all(c["frames"] > 10 for c in report["captures"])

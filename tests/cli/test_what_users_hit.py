"""Small things a user hit with real agents, each held: JSON that is JSON, the same output
options everywhere, a filter that matches nothing says so, wall-clock times in UTC, one
edit shown once, a terminal's command as written, and peers named as far as known."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from support.demo import demo_database
from support.proc import PROXY, wait_recorded


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("hit") / "demo.sqlite"
    demo_database(db)
    return db


def run(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PROXY, *args, "--db", str(db)], capture_output=True, text=True,
                          timeout=60)  # fmt: skip


def test_show_json_has_json_where_the_capture_holds_json(demo: Path) -> None:
    doc = json.loads(run(demo, "show", "--json").stdout)
    assert doc["capture"]["client_info"]["name"] == "demo-client"
    assert isinstance(doc["capture"]["agent_command"], list)
    assert doc["capture"]["id"] == 1
    spawn = next(e for e in doc["events"] if e["kind"] == "spawn")
    assert isinstance(spawn["detail"], dict) and spawn["line"].startswith("agent started")


@pytest.mark.parametrize("command", [["check"], ["search", "tool_call"], ["diff", "1", "1"]])
def test_every_listing_takes_the_same_output_options(demo: Path, command: list[str]) -> None:
    r = run(demo, *command, "--no-pager", "--color", "never")
    assert "no such option" not in r.stderr and r.returncode in (0, 1), r.stderr


@pytest.mark.parametrize("group", [["replay", "client"], ["otel", "push"]])
def test_a_group_takes_the_database_for_its_commands(demo: Path, group: list[str]) -> None:
    r = subprocess.run([*PROXY, group[0], "--db", str(demo), group[1], "--help"],
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode == 0, r.stderr


def test_a_filter_that_matches_nothing_says_so(demo: Path) -> None:
    r = run(demo, "show", "--method", "no/such", "--no-pager")
    assert "no frame matches" in r.stderr
    r = run(demo, "show", "--grep", "zzqqzz", "--no-pager")
    assert r.stderr.strip() == "acp-proxy: no frame matches"
    r = run(demo, "tail", "--method", "no/such")
    assert r.stderr.strip() == "acp-proxy: no frame matches"


def test_wall_times_are_utc_as_the_header_says(demo: Path) -> None:
    out = run(demo, "show", "--wall", "--no-pager").stdout.splitlines()
    started = next(line for line in out if "started " in line).split("started ")[1][:23]
    first = next(line for line in out if " #0 " in line).split()[0]
    t0 = datetime.strptime(started, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC)
    shown = datetime.strptime(first, "%H:%M:%S.%f").time()
    assert abs(t0.hour - shown.hour) in (0, 23) and shown.minute in (
        t0.minute,
        (t0.minute + 1) % 60,
    )


def test_an_edit_and_the_write_that_applied_it_are_one_change(demo: Path) -> None:
    out = run(demo, "diffs", "--no-pager").stdout
    assert out.count("diff --git a/config.json") == 1
    assert "applied by #13 fs/write_text_file (done)" in out
    changes = json.loads(run(demo, "diffs", "--json").stdout)
    assert [c["applies"] for c in changes] == [None, 12]  # both frames, linked


def test_peers_are_named_as_far_as_known(tmp_path: Path) -> None:
    from support.hostile import record_script

    db = tmp_path / "p.sqlite"
    record_script(db, tmp_path, [("c2a", {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                          "params": {"protocolVersion": 1}})])  # fmt: skip
    wait_recorded(db)
    (row,) = json.loads(run(db, "captures", "--json").stdout)
    assert row["peers"] == "? ⇄ (script_agent.py)"

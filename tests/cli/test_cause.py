"""The cause is in stderr: the agent's own words beside the failure, in every view.

A capture whose agent fails with a unique message on stderr (tests/support/cause.py) shows
that message in search, in share's output (its secret redacted), beside the failed turn,
and in the web inspector's capture API (the page itself: tests/ui/test_browser.py).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support.cause import SECRET, UNIQUE, failing_capture
from support.proc import PROXY


@pytest.fixture(scope="module")
def failed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("cause")
    db = tmp / "cause.sqlite"
    failing_capture(db, tmp)
    return db


def cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PROXY, *args, "--db", str(db)], capture_output=True, text=True,
                          timeout=60)  # fmt: skip


def test_the_turns_view_says_why_the_turn_failed(failed: Path) -> None:
    out = cli(failed, "show", "--view", "turns", "--no-pager").stdout
    assert f"error -32603 Internal error: {UNIQUE} query failed" in out
    (said,) = [line for line in out.splitlines() if "stderr" in line]
    assert UNIQUE in said and "ERROR" in said and "\\x1b" not in said  # colours drawn, not shown


def test_search_finds_what_only_stderr_says(failed: Path) -> None:
    r = cli(failed, "search", "cannot be used with root/sudo")
    assert r.returncode == 0
    (hit,) = r.stdout.splitlines()
    assert "· stderr" in hit and "[cannot be used with root/sudo]" in hit
    hits = json.loads(cli(failed, "search", UNIQUE, "--json").stdout)
    assert sorted(h["source"] for h in hits) == ["frame", "stderr"]


def test_share_keeps_the_cause_and_not_the_key(failed: Path, tmp_path: Path) -> None:
    out = tmp_path / "bug.jsonl"
    r = cli(failed, "share", "-o", str(out))
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert UNIQUE in text and SECRET not in text
    records = [json.loads(line) for line in text.splitlines()]
    stderr = [x for x in records if x.get("record") == "stderr"]
    assert any(UNIQUE in x["text"] and "[redacted:anthropic-key:1]" in x["text"] for x in stderr)
    assert {x["kind"] for x in records if x.get("record") == "event"} >= {"spawn", "exit"}
    assert "stderr write(s) and event(s)" in r.stderr
    bare = tmp_path / "frames.jsonl"
    assert cli(failed, "share", "--frames-only", "-o", str(bare)).returncode == 0
    assert '"record":"stderr"' not in bare.read_text()
    page = tmp_path / "bug.html"
    assert cli(failed, "share", "--format", "html", "-o", str(page)).returncode == 0
    html = page.read_text()
    assert UNIQUE in html and SECRET not in html and '<span class="f1 sb">ERROR</span>' in html


def test_imported_share_shows_the_cause(failed: Path, tmp_path: Path) -> None:
    out = tmp_path / "bug.jsonl"
    cli(failed, "share", "-o", str(out))
    other = tmp_path / "other.sqlite"
    assert cli(other, "import", str(out)).returncode == 0
    turns = cli(other, "show", "--view", "turns", "--no-pager").stdout
    assert UNIQUE in turns and SECRET not in turns


def test_colours_are_drawn_on_a_terminal_that_wants_them(failed: Path) -> None:
    out = cli(failed, "show", "--color", "always", "--no-pager").stdout
    line = next(x for x in out.splitlines() if UNIQUE in x)
    assert "\x1b[31;1mERROR\x1b[0m" in line  # re-made by us from the parsed look
    assert "\\x1b" not in line

"""``tail -n N`` with a filter gives the last N matching frames; ``show --at`` stops events
there too; ``show --view`` applies --session and refuses what it cannot apply."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from support.demo import demo_database
from support.proc import PROXY, peer, run_proxy


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PROXY, *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("show") / "rec.sqlite"
    return demo_database(db)


def test_tail_with_a_filter_finds_old_matches(demo_copy: Path) -> None:
    db = demo_copy
    run_proxy(db, peer("lifecycle_agent.py", "flood", "3000"))  # 3000 newer frames
    r = cli("tail", "-n", "2", "--method", "initialize", "--db", str(db))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 2 and all("initialize" in x for x in lines), lines
    assert "→ request" in lines[0] and "← response" in lines[1]


def _events_and_frames(out: str) -> list[tuple[str, float, str]]:
    found = []
    for line in out.splitlines():
        m = re.match(r"\s*(\S+)ms\s+(#\d+|·)", line)
        if m:
            found.append(("frame" if m.group(2) != "·" else "event", float(m.group(1)), line))
    return found


def test_show_at_prints_no_event_from_after_it(demo_db: Path) -> None:
    out = cli("show", "--db", str(demo_db), "--at", "3").stdout
    items = _events_and_frames(out)
    last_frame = max(t for k, t, _ in items if k == "frame")
    assert [x for x in items if x[0] == "event" and x[1] > last_frame] == []
    assert "· client_eof" not in out and "· exit" not in out
    assert "· spawn" in out  # the events before it are still there


def test_show_with_a_filter_keeps_events(demo_db: Path) -> None:
    out = cli("show", "--db", str(demo_db), "--method", "initialize").stdout
    assert "· spawn" in out and "· exit" in out


def test_show_wall_uses_wall_clock_for_events_too(demo_db: Path) -> None:
    out = cli("show", "--db", str(demo_db), "--wall").stdout
    body = [x for x in out.splitlines()[3:] if x.strip()]
    assert body and all(re.match(r"\d\d:\d\d:\d\d\.\d{3} ", x) for x in body), body[:5]


def test_show_view_applies_session(demo_db: Path) -> None:
    r = cli("show", "--db", str(demo_db), "--view", "tools", "--session", "nope", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == []
    r = cli("show", "--db", str(demo_db), "--view", "tools", "--session", "sess_demo_1", "--json")
    assert len(json.loads(r.stdout)) == 3


@pytest.mark.parametrize(
    "args",
    [
        ["--method", "fs/*"],
        ["--wall"],
        ["--stderr"],
        ["--kind", "request"],
        ["--direction", "a2c"],
        ["--update", "plan"],
        ["--anomalous"],
    ],
)
def test_show_view_refuses_what_it_cannot_apply(demo_db: Path, args: list[str]) -> None:
    r = cli("show", "--db", str(demo_db), "--view", "tools", *args)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert args[0] in r.stderr and "--view" in r.stderr


def test_tail_n_takes_zero_or_more(demo_db: Path) -> None:
    r = cli("tail", "-n", "-1", "--db", str(demo_db))
    assert r.returncode == 2 and "--lines takes a number of 0 or more" in r.stderr
    r = cli("tail", "-n", "0", "--db", str(demo_db))
    assert r.returncode == 0 and r.stdout == ""


def test_show_and_tail_take_a_filter_expression(demo_db: Path) -> None:
    """``--filter`` is the inspector's filter language; a mistake is exit 2 with its column."""
    expr = "method:session/* and not kind:notification"
    shown = cli("show", "--db", str(demo_db), "--json", "--filter", expr)
    assert shown.returncode == 0, shown.stderr
    frames = json.loads(shown.stdout)["frames"]
    assert frames and all(f["method"].startswith("session/") for f in frames), frames[:3]
    assert {f["kind"] for f in frames} <= {"request", "response"}
    tailed = cli("tail", "-n", "100", "--db", str(demo_db), "--filter", "dir:a2c error:any")
    assert tailed.returncode == 0
    assert all("←" in x for x in tailed.stdout.splitlines())
    bad = cli("show", "--db", str(demo_db), "--filter", "method:x and (kind:request")
    assert bad.returncode == 2 and "column 14" in bad.stderr, bad.stderr

"""One rule for what a CAPTURE argument names, in every command: an id, a uid prefix,
``-1``/``latest``, or a jsonl export (which carries the whole capture)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest
from support.demo import demo_database
from support.proc import PROXY, peer, run_proxy


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PROXY, *args], capture_output=True, text=True, timeout=120, cwd=cwd, check=False
    )


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A database with the demo capture, and its jsonl export."""
    d = tmp_path_factory.mktemp("refs")
    db = d / "rec.sqlite"
    demo_database(db)
    export = d / "d.jsonl"
    r = cli("export", "1", "--db", str(db), "-o", str(export))
    assert r.returncode == 0, r.stderr
    return db, export


@pytest.mark.parametrize(
    "args",
    [
        ["show"],
        ["show", "--view", "frames"],
        ["show", "--view", "turns"],
        ["show", "--json"],
        ["export", "--format", "html"],
        ["export", "--format", "jsonl"],
        ["export", "--format", "patch"],
        ["tools"],
        ["terminals"],
        ["diffs"],
    ],
)
def test_every_command_takes_a_jsonl_export(demo: tuple[Path, Path], args: list[str]) -> None:
    db, export = demo
    from_file = cli(args[0], str(export), *args[1:], "--db", str(db.parent / "none.sqlite"))
    assert from_file.returncode == 0, from_file.stderr
    from_db = cli(args[0], "1", *args[1:], "--db", str(db))
    assert from_db.returncode == 0, from_db.stderr
    assert from_file.stdout.strip()
    if args[:2] == ["export", "--format"] and args[2] != "html":
        assert from_file.stdout == from_db.stdout


def test_a_jsonl_export_carries_metadata_stderr_and_events(db: Path, tmp_path: Path) -> None:
    agent = peer("lifecycle_agent.py", "stderr")
    run_proxy(db, agent, extra=["--label", "bug 7"])
    export = tmp_path / "bug.jsonl"
    assert cli("export", "--db", str(db), "-o", str(export)).returncode == 0
    lines = [json.loads(x) for x in export.read_text().splitlines()]
    meta = lines[0]
    assert meta["record"] == "capture" and meta["label"] == "bug 7"
    assert meta["agent_command"] == agent and meta["exit_code"] is not None
    assert {"transport", "started_at", "uid", "client_info", "agent_capabilities"} <= set(meta)
    assert any(x.get("record") == "event" and x["kind"] == "spawn" for x in lines)
    stderr = [x for x in lines if x.get("record") == "stderr"]
    assert stderr and ("text" in stderr[0] or "base64" in stderr[0])
    # and it comes back: show of the file says what show of the database says
    file_show = cli("show", str(export), "--stderr").stdout.splitlines()
    db_show = cli("show", "--db", str(db), "--stderr").stdout.splitlines()
    assert file_show[1:] == db_show[1:] and "bug 7" in file_show[1]
    assert file_show[0].startswith(f"capture {export}")
    # an export of the export is the same file
    again = tmp_path / "again.jsonl"
    assert cli("export", str(export), "-o", str(again)).returncode == 0
    assert again.read_bytes() == export.read_bytes()


def test_old_exports_without_metadata_still_read(demo: tuple[Path, Path], tmp_path: Path) -> None:
    _db, export = demo
    old = tmp_path / "old.jsonl"
    old.write_text(
        "".join(
            line + "\n"
            for line in export.read_text().splitlines()
            if "record" not in json.loads(line)
        )
    )
    r = cli("show", str(old))
    assert r.returncode == 0 and "initialize" in r.stdout, r.stderr


def test_minus_one_and_latest_are_the_latest_capture(demo: tuple[Path, Path]) -> None:
    db, _ = demo
    for ref in ("-1", "latest"):
        for cmd in (["show", ref], ["tools", ref], ["export", ref, "--format", "patch"]):
            r = cli(*cmd, "--db", str(db))
            assert r.returncode == 0, (cmd, r.stderr)
    assert cli("show", "-1", "--db", str(db)).stdout == cli("show", "--db", str(db)).stdout


def test_a_numeric_uid_prefix_finds_its_capture(demo: tuple[Path, Path], tmp_path: Path) -> None:
    db = tmp_path / "copy.sqlite"
    db.write_bytes(demo[0].read_bytes())
    db.chmod(0o600)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE captures SET uid = '20250101abcdef' WHERE id = 1")
    conn.close()
    r = cli("show", "2025", "--db", str(db))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("capture 1  ")
    # a numeric reference that is neither an id nor a uid prefix is still an error
    r = cli("show", "999999", "--db", str(db))
    assert r.returncode == 2 and "no capture '999999'" in r.stderr


def test_captures_n_zero_and_negative(demo: tuple[Path, Path]) -> None:
    db, _ = demo
    r = cli("captures", "-n", "0", "--db", str(db), "--json")
    assert r.returncode == 0 and json.loads(r.stdout) == []
    r = cli("captures", "-n", "-1", "--db", str(db))
    assert r.returncode == 2 and "--limit takes a number of 0 or more" in r.stderr


def test_tail_says_a_jsonl_export_is_for_show(demo: tuple[Path, Path]) -> None:
    db, export = demo
    r = cli("tail", "--capture", str(export), "--db", str(db))
    assert r.returncode == 2
    assert (
        r.stderr == f"acp-proxy: error: tail reads the database; for the export {export} use show\n"
    )


def test_a_short_number_that_is_no_id_is_never_a_uid_prefix(
    demo: tuple[Path, Path], tmp_path: Path
) -> None:
    # "rm 1" run twice must not delete the capture whose uid happens to start with "1"
    db = tmp_path / "copy.sqlite"
    db.write_bytes(demo[0].read_bytes())
    db.chmod(0o600)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE captures SET uid = '1abcdef0' WHERE id = 1")
        conn.execute("UPDATE captures SET id = 7 WHERE id = 1")
    conn.close()
    r = cli("show", "1", "--db", str(db))
    assert r.returncode == 2 and "no capture '1'" in r.stderr

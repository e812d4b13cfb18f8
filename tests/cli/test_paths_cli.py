"""Paths as an editor passes them (no shell): ``~`` and ``$VAR`` expanded, a path that
cannot be a database or an output file refused in one line, no silent wait."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.proc import PROXY


def _run(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PROXY, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("spelling", ["~/acp.sqlite", "$HOME/acp.sqlite", "${HOME}/acp.sqlite"])
def test_db_expands_home_and_variables(tmp_path: Path, spelling: str) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    agent = [sys.executable, "-c", "pass"]
    r = _run("record", "--db", spelling, "--", *agent, cwd=project, env={"HOME": str(home)})
    assert r.returncode == 0, r.stderr
    assert (home / "acp.sqlite").exists()
    assert list(project.iterdir()) == []  # nothing like ./~/acp.sqlite in the project
    r = _run("captures", "--db", spelling, cwd=project, env={"HOME": str(home)})
    assert r.returncode == 0 and "exit 0" in r.stdout


def test_output_and_cwd_options_expand_home(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    env = {"HOME": str(home)}
    assert _run("demo", "--db", "~/acp.sqlite", cwd=project, env=env).returncode == 0
    r = _run("export", "--db", "~/acp.sqlite", "-o", "~/bug.jsonl", cwd=project, env=env)
    assert r.returncode == 0, r.stderr
    assert (home / "bug.jsonl").exists() and list(project.iterdir()) == []
    (home / "ws").mkdir()
    agent = [sys.executable, "-m", "acp_proxy.demo.agent"]
    r = _run("replay", "client", "--db", "~/acp.sqlite", "--cwd", "~/ws", "--", *agent,
             cwd=project, env=env)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    shown = _run("show", "--db", "~/acp.sqlite", "--method", "session/new", cwd=project, env=env)
    assert f"cwd={home / 'ws'}" in shown.stdout.replace('"', "") or str(home / "ws") in shown.stdout


def test_a_regular_file_in_the_db_path_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x")
    for args in (["demo"], ["captures"], ["show"], ["export"]):
        r = _run(args[0], "--db", "notes.txt/x.sqlite", *args[1:], cwd=tmp_path)
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.strip() == (
            "acp-proxy: error: --db notes.txt/x.sqlite: notes.txt is a file, not a directory"
        ), args


@pytest.mark.parametrize("fmt", ["jsonl", "html", "patch", "asciicast"])
def test_export_into_a_missing_directory_is_one_clear_error(tmp_path: Path, fmt: str) -> None:
    db = tmp_path / "rec.sqlite"
    assert _run("demo", "--db", str(db), cwd=tmp_path).returncode == 0
    target = tmp_path / "missing" / "out.x"
    extra = ["--terminal", "term_1"] if fmt == "asciicast" else []
    r = _run("export", "--db", str(db), "--format", fmt, *extra, "-o", str(target), cwd=tmp_path)
    assert r.returncode == 3, r.stderr
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1
    assert r.stderr.startswith(f"acp-proxy: error: cannot write {target}: ")


def test_export_into_an_unwritable_directory_is_one_clear_error(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    db = tmp_path / "rec.sqlite"
    assert _run("demo", "--db", str(db), cwd=tmp_path).returncode == 0
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    r = _run("export", "--db", str(db), "-o", str(locked / "o.jsonl"), cwd=tmp_path)
    assert r.returncode == 3 and r.stderr.count("\n") == 1, r.stderr


def test_tail_follow_says_what_it_waits_for(tmp_path: Path) -> None:
    typo = tmp_path / "typo.sqlite"
    proc = subprocess.Popen(
        [*PROXY, "tail", "-f", "--db", str(typo), "--interval", "0.05"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert line.strip() == f"acp-proxy: waiting for {typo} to be created (Ctrl-C to stop)"
        time.sleep(0.2)
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait(timeout=10)

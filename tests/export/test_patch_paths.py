"""``export --format patch`` never writes outside the workspace: paths that leave the
session's working directory are left out and named on stderr, and patch text an agent sent
cannot smuggle in another file. Checked with ``git apply --unsafe-paths`` in a real repo."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.hostile import Step, record_script
from support.proc import PROXY

from acp_proxy.reconstruct.patch import well_formed
from acp_proxy.reconstruct.paths import display_path, workspace_path


def _rpc(**fields: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", **fields}


def _session(repo: Path, content: list[dict[str, Any]]) -> list[Step]:
    sid = "s1"
    return [
        ("c2a", _rpc(id=0, method="initialize", params={"protocolVersion": 1})),
        ("a2c", _rpc(id=0, result={"protocolVersion": 1})),
        ("c2a", _rpc(id=1, method="session/new", params={"cwd": str(repo), "mcpServers": []})),
        ("a2c", _rpc(id=1, result={"sessionId": sid})),
        ("a2c", _rpc(method="session/update", params={"sessionId": sid, "update": {
            "sessionUpdate": "tool_call", "toolCallId": "t1", "title": "edit",
            "status": "completed", "content": content}})),
    ]  # fmt: skip


def _git(repo: Path, *args: str, patch: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], cwd=repo, input=patch, capture_output=True, timeout=60)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "work" / "repo"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "tracked.txt").write_text("a\n")
    (repo / "plain.txt").write_text("x\n")
    return repo


def test_paths_leaving_the_workspace_are_left_out_and_named(
    db: Path, tmp_path: Path, repo: Path
) -> None:
    outside = tmp_path / "elsewhere"
    smuggle = (
        f"diff --git {repo}/tracked.txt {repo}/tracked.txt\n--- {repo}/tracked.txt\n"
        f"+++ {repo}/tracked.txt\n@@ -1 +1 @@\n-a\n+b\n"
        "--- a/../smuggled.txt\n+++ b/../smuggled.txt\n@@ -0,0 +1 @@\n+pwned\n"
    )
    clean = (
        f"diff --git {repo}/plain.txt {repo}/plain.txt\n--- {repo}/plain.txt\n"
        f"+++ {repo}/plain.txt\n@@ -1 +1 @@\n-x\n+y\n"
    )
    content = [
        {"type": "diff", "path": f"{repo}/../escaped.txt", "newText": "pwned\n"},
        {"type": "diff", "path": f"{outside}/abs.txt", "newText": "pwned\n"},
        {"type": "diff", "path": f"{repo}/.git/hooks/post-commit", "newText": "pwned\n"},
        {"type": "diff", "path": f"{repo}/ok.txt", "newText": "fine\r\u2028\x85--- a/../x\n"},
        {"type": "diff", "changes": [{"operation": "modify", "path": f"{repo}/tracked.txt"}],
         "patch": {"format": "git_patch", "text": smuggle}},
        {"type": "diff", "changes": [{"operation": "modify", "path": f"{repo}/plain.txt"}],
         "patch": {"format": "git_patch", "text": clean}},
    ]  # fmt: skip
    record_script(db, tmp_path, _session(repo, content))
    r = subprocess.run(
        [*PROXY, "export", "--db", str(db), "--format", "patch"], capture_output=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    notes = r.stderr.decode()
    for skipped in (f"{repo}/../escaped.txt", f"{outside}/abs.txt", f"{repo}/.git/hooks/"):
        assert f"skipped {skipped}" in notes
    assert f"skipped {repo}/tracked.txt: its patch text is not plain" in notes
    heads = [line for line in r.stdout.split(b"\n") if line.startswith((b"diff", b"--", b"++"))]
    assert heads and [h for h in heads if b".." in h or b".git" in h] == []
    assert _git(repo, "apply", "--check", patch=r.stdout).returncode == 0
    applied = _git(repo, "apply", "--unsafe-paths", patch=r.stdout)
    assert applied.returncode == 0, applied.stderr
    assert (repo / "ok.txt").read_bytes() == "fine\r\u2028\x85--- a/../x\n".encode()
    assert (repo / "plain.txt").read_text() == "y\n"
    assert (repo / "tracked.txt").read_text() == "a\n"  # its smuggling section left out
    for written in ("work/escaped.txt", "elsewhere/abs.txt", "work/smuggled.txt"):
        assert not (tmp_path / written).exists()
    assert not (repo / ".git" / "hooks" / "post-commit").exists()


def test_workspace_path() -> None:
    assert workspace_path("/w/p/src/a.py", "/w/p") == "src/a.py"
    assert workspace_path("/w/p/src/a.py", "/w/p/") == "src/a.py"
    assert workspace_path("src/a.py", "/w/p") == "src/a.py"
    for bad in (
        "/w/p/../../etc/cron.d/evil",
        "/w/p/src/../../x",
        "/w/px/a",
        "/etc/passwd",
        "/w/p/./a",
        "/w/p//a",
        "/w/p/.git/hooks/pre-commit",
        "/w/p/sub/.GIT/config",
        "/w/p/a\nb",
        "../x",
        "/w/p",
    ):
        assert workspace_path(bad, "/w/p") is None, bad
    assert workspace_path("/w/p/a", None) is None and workspace_path("/w/p/a", "") is None
    assert display_path("/w/p/../../etc/x", "/w/p") == "/w/p/../../etc/x"  # never "../../"
    assert display_path("/w/p/a", "/w/p") == "a"


def test_well_formed_sections() -> None:
    head = "diff --git a/x b/x\n--- a/x\n+++ b/x\n"
    assert well_formed(head + "@@ -1,2 +1,2 @@\n a\n-b\n+c\n")
    assert well_formed(head + "@@ -1 +1 @@\n-a\n+b\n\\ No newline at end of file\n")
    assert well_formed("diff --git a/x b/y\nsimilarity index 90%\nrename from x\nrename to y\n")
    assert not well_formed(head + "@@ -1 +1 @@\n-a\n+b\n--- a/../e\n+++ b/../e\n")
    assert not well_formed(head + "@@ -1,2 +1,2 @@\n-a\n+b\n")  # cut short
    assert not well_formed("diff --git a/x b/x\nnew file mode 120000\n--- /dev/null\n+++ b/x\n")
    assert not well_formed("diff --git a/x b/x\nGIT binary patch\nliteral 0\n")

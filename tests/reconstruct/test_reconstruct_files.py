"""Files and diffs: v1 diffs, fs reads and writes, v2 changes and patches, stale edits."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.paths import DATA, RECORDINGS

from acp_proxy.export.jsonl import read_jsonl
from acp_proxy.reconstruct import reconstruct
from acp_proxy.reconstruct.patch import apply_hunks, split_git_patch, unified
from acp_proxy.reconstruct.views import diffs_json, files_json

DATA = DATA / "reconstruct"
RECORDINGS = RECORDINGS


def _load(path: Path) -> Any:
    with open(path, "rb") as f:
        return reconstruct(read_jsonl(f))


def test_unified_round_trips_through_apply_hunks() -> None:
    cases = [
        ("a\nb\nc\n", "a\nB\nc\n"),
        ("a\nb", "a\nb\n"),  # newline added at the end
        ("a\nb\n", "a\nc"),  # newline removed at the end
        ("", "x\n"),
        ("x\n", ""),
        ("".join(f"{i}\n" for i in range(40)), "".join(f"{i}\n" for i in range(40) if i != 20)),
    ]
    for old, new in cases:
        patch = unified(old, new, "f.txt")
        assert apply_hunks(old, patch) == new, (old, new, patch)
    assert unified("same\n", "same\n", "f") == ""


def test_apply_hunks_refuses_mismatched_context() -> None:
    patch = unified("a\nb\n", "a\nc\n", "f")
    assert apply_hunks("a\nX\n", patch) is None
    assert apply_hunks("", patch) is None


def test_split_git_patch_reads_paths_from_headers() -> None:
    text = (
        "diff --git /p/a /p/a\n--- /p/a\n+++ /p/a\n@@ -1 +1 @@\n-x\n+y\n"
        "diff --git a/old b/new\nrename from old\nrename to new\n"
        "diff --git /p/n /p/n\nnew file mode 100644\n--- /dev/null\n+++ /p/n\n@@ -0,0 +1 @@\n+z\n"
    )
    got = [(s.old_path, s.new_path) for s in split_git_patch(text)]
    assert got == [("/p/a", "/p/a"), ("old", "new"), (None, "/p/n")]


def test_v1_diff_and_fs_read_write_timeline() -> None:
    r = _load(RECORDINGS / "demo-v1.jsonl")
    [diff, write] = diffs_json(r)
    assert (diff["operation"], diff["source"], diff["toolCallId"]) == (
        "modify",
        "diff",
        "call_edit",
    )
    assert diff["patch"].startswith("diff --git a/config.json b/config.json\n")
    assert '-  "debug": false,\n+  "debug": true,\n' in diff["patch"]
    assert diff["stale"] is False
    # the write is compared with what the read showed was on disk
    assert write["source"] == "fs_write" and write["ok"] is True
    assert write["patch"] == diff["patch"]
    [f] = files_json(r)
    assert [v["operation"] for v in f["versions"]] == ["read", "modify", "write"]
    assert f["startContent"] == '{\n  "debug": false,\n  "name": "demo"\n}\n'
    assert f["content"] == '{\n  "debug": true,\n  "name": "demo"\n}\n'


def test_v1_stale_diff_new_file_and_refused_write() -> None:
    r = _load(DATA / "v1-edges.jsonl")
    changes = diffs_json(r)
    stale = changes[0]
    assert stale["stale"] is True  # oldText "hello" but the read showed "hi"
    new_file = changes[1]
    assert (new_file["operation"], new_file["oldText"]) == ("add", None)
    assert "new file mode 100644\n--- /dev/null\n+++ b/notes.txt\n" in new_file["patch"]
    assert new_file["patch"].endswith("+b\n\\ No newline at end of file\n")
    refused, written = changes[2], changes[3]
    assert refused["ok"] is False and written["ok"] is True
    assert written["oldText"] == "print('hi')\n"  # the refused write left the disk alone
    h = r.files.paths["/home/u/v1/main.py"]
    assert h.content == "print('hi')\nprint('there')\n"
    assert h.content_at(8) == (True, "print('hi')\n")


def test_v2_changes_are_authoritative_and_patch_sections_match_paths() -> None:
    r = _load(DATA / "v2-diffs.jsonl")
    rows = diffs_json(r)
    ops = [(c["operation"], c["path"], c["oldPath"]) for c in rows]
    P = "/home/u/proj"
    assert ops == [
        ("modify", f"{P}/src/config.json", None),  # sent twice, recorded once
        ("add", f"{P}/NEW.md", None),
        ("move", f"{P}/b.txt", f"{P}/a.txt"),
        ("modify", f"{P}/assets/logo.png", None),
        ("delete", f"{P}/old.log", None),
        ("copy", f"{P}/c.txt", f"{P}/b.txt"),
        ("_acme.chmod", f"{P}/run.sh", None),
        ("future_op", None, None),
        ("modify", f"{P}/src/config.json", None),
        ("modify", f"{P}/NEW.md", None),
        ("modify", f"{P}/NEW.md", None),
    ]
    by = {(c["operation"], c["path"]): c for c in rows}
    assert by[("add", f"{P}/NEW.md")]["patch"].startswith(f"diff --git {P}/NEW.md")
    assert by[("move", f"{P}/b.txt")]["patch"].startswith(f"diff --git {P}/a.txt {P}/b.txt")
    logo = by[("modify", f"{P}/assets/logo.png")]
    assert (logo["fileType"], logo["mimeType"], logo["patch"]) == ("binary", "image/png", None)
    assert by[("delete", f"{P}/old.log")]["patch"] is None  # patch: null
    assert rows[1]["newText"] == "# New\nno newline"  # content from the add patch
    assert rows[-2]["newText"] == "# New\nwith newline\n" and rows[-2]["stale"] is False
    assert rows[-1]["stale"] is True  # its context does not match the known content
    files = {f["path"]: f for f in files_json(r)}
    assert files[f"{P}/a.txt"]["exists"] is False and files[f"{P}/b.txt"]["exists"] is True
    assert files[f"{P}/old.log"]["exists"] is False
    assert files[f"{P}/run.sh"]["exists"] is None  # unknown operation: no longer sure


def _git_repo(root: Path, files: dict[str, str]) -> None:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


@pytest.mark.skipif(
    subprocess.run(["git", "--version"], capture_output=True).returncode != 0, reason="no git"
)
def test_session_patch_applies_with_git_on_the_starting_tree(tmp_path: Path) -> None:
    from acp_proxy.export.core.patch import session_patch

    r = _load(RECORDINGS / "demo-v1.jsonl")
    result = session_patch(r)
    [path] = result.paths
    h = r.files.paths[path]
    assert h.start_content is not None
    _git_repo(tmp_path, {"config.json": h.start_content})
    (tmp_path / "p.patch").write_text(result.text)
    subprocess.run(["git", "apply", "p.patch"], cwd=tmp_path, check=True)
    assert (tmp_path / "config.json").read_text() == h.content

    r = _load(DATA / "v1-edges.jsonl")
    result = session_patch(r)
    _git_repo(tmp_path / "v1", {"main.py": "print('hi')\n"})
    (tmp_path / "v1" / "p.patch").write_text(result.text)
    subprocess.run(["git", "apply", "p.patch"], cwd=tmp_path / "v1", check=True)
    assert (tmp_path / "v1" / "main.py").read_text() == "print('hi')\nprint('there')\n"
    assert (tmp_path / "v1" / "notes.txt").read_text() == "a\nb"


def test_session_patch_uses_v2_patch_text_when_contents_are_unknown(tmp_path: Path) -> None:
    from acp_proxy.export.core.patch import session_patch

    r = _load(DATA / "v2-diffs.jsonl")
    result = session_patch(r)
    assert "diff --git a/a.txt b/b.txt\nsimilarity index 80%\nrename from a.txt\n" in result.text
    skipped = dict(result.skipped)
    assert "/home/u/proj/assets/logo.png" in skipped
    _git_repo(tmp_path, {"a.txt": "keep\nold\n"})
    moved_only = "".join(s.text for s in split_git_patch(result.text) if s.new_path == "b.txt")
    (tmp_path / "p.patch").write_text(moved_only)
    subprocess.run(["git", "apply", "p.patch"], cwd=tmp_path, check=True)
    assert (tmp_path / "b.txt").read_text() == "keep\nnew\n"


def test_without_timelines_a_path_keeps_only_what_a_refused_write_goes_back_to() -> None:
    from acp_proxy.reconstruct.files import Files

    full, lean = Files(), Files(timelines=False)
    for files in (full, lean):
        files.read({"path": "/f"}, {"content": "a\n"}, "s", 1, 1)
        ok = files.write({"path": "/f", "content": "b\n"}, "s", 2, 2, None)
        refused = files.write({"path": "/f", "content": "c\n"}, "s", 3, 3, None)
        files.v1_diff({"path": "/f", "oldText": "b\n", "newText": "d\n"}, "s", "t", 4, 4, None)
        assert ok is not None and refused is not None
        files.write_done(ok)
        files.write_failed(refused, 5)  # back to what the diff left
        files.write({"path": "/f", "content": "e\n"}, "s", 6, 6, None)  # not answered
    f, g = full.paths["/f"], lean.paths["/f"]
    assert [v.seq for v in f.versions] == [1, 2, 4, 6] and [v.seq for v in g.versions] == [6]
    assert (g.exists, g.content, g.disk_exists, g.disk_content) == (
        f.exists, f.content, f.disk_exists, f.disk_content
    )  # fmt: skip
    assert g.content_at(5) == f.content_at(5) == (True, "d\n")
    assert [(c.old_text, c.new_text, c.ok) for c in lean.changes] == [
        (c.old_text, c.new_text, c.ok) for c in full.changes
    ]

"""``acp-proxy import``: jsonl exports back into a database, through the recorder's core.

Round trip: record → export → import → export gives the same bytes, and every view of the
imported capture is the view of the original. A redacted export imports too; a bad file
is one error line naming the line.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support.hostile import hostile_session, record_script
from support.proc import PROXY

from acp_proxy.demo import run_demo


def cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*PROXY, *args], capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("import") / "demo.sqlite"
    run_demo(db)
    return db


VIEWS = ("turns", "tools", "permissions", "terminals", "diffs", "files", "sessions")


def _views(db: Path, capture: str) -> dict[str, object]:
    out: dict[str, object] = {}
    for view in VIEWS:
        r = cli("show", "--db", str(db), capture, "--view", view, "--json")
        assert r.returncode == 0, r.stderr.decode()
        out[view] = json.loads(r.stdout)
    return out


def test_export_import_export_is_byte_identical_and_views_agree(
    demo_db: Path, tmp_path: Path
) -> None:
    first = tmp_path / "a.jsonl"
    assert cli("export", "--db", str(demo_db), "-o", str(first)).returncode == 0
    other = tmp_path / "other.sqlite"
    r = cli("import", "--db", str(other), str(first))
    assert r.returncode == 0, r.stderr.decode()
    assert b"imported 46 frames as capture 1" in r.stdout
    again = tmp_path / "b.jsonl"
    assert cli("export", "--db", str(other), "1", "-o", str(again)).returncode == 0
    assert again.read_bytes() == first.read_bytes()
    assert _views(other, "1") == _views(demo_db, "1")
    # the capture's initialize fields were learnt as when recording
    shown = cli("captures", "--db", str(other)).stdout.decode()
    assert "demo-client 1.0.0 ⇄ demo-agent 1.0.0" in shown


def test_importing_twice_adds_nothing(demo_db: Path, tmp_path: Path) -> None:
    export = tmp_path / "a.jsonl"
    assert cli("export", "--db", str(demo_db), "-o", str(export)).returncode == 0
    other = tmp_path / "other.sqlite"
    assert cli("import", "--db", str(other), str(export)).returncode == 0
    r = cli("import", "--db", str(other), "--json", str(export))
    assert r.returncode == 0
    assert json.loads(r.stdout)[0]["already"] is True
    listed = cli("captures", "--db", str(other), "--json")
    assert len(json.loads(listed.stdout)) == 1


def test_a_redacted_export_imports_and_replays_its_own_bytes(demo_db: Path, tmp_path: Path) -> None:
    shared = tmp_path / "s.jsonl"
    assert cli("share", "--db", str(demo_db), "--redact", "all", "-o", str(shared)).returncode == 0
    r = cli("import", "--db", str(demo_db), str(shared))  # next to its original: a new one
    assert r.returncode == 0 and b"as capture 2" in r.stdout, r.stdout
    back = tmp_path / "back.jsonl"
    assert cli("export", "--db", str(demo_db), "2", "-o", str(back)).returncode == 0
    before = [json.loads(x) for x in shared.read_bytes().splitlines()]
    after = [json.loads(x) for x in back.read_bytes().splitlines()]
    for obj in before:
        obj.pop("redacted", None)
    assert after == before
    turns = json.loads(cli("show", "--db", str(demo_db), "2", "--view", "turns", "--json").stdout)
    assert turns[0]["stopReason"] == "end_turn"
    assert turns[0]["prompt"].startswith("[redacted:text:1]")


def test_hostile_bytes_round_trip(tmp_path: Path) -> None:
    """Invalid UTF-8, CRLF, noise, a missing final newline, big integers: exported, imported
    and exported again, byte for byte; and the stream bytes match the original's."""
    db = tmp_path / "h.sqlite"
    record_script(db, tmp_path, hostile_session(str(tmp_path)))
    first = tmp_path / "a.jsonl"
    assert cli("export", "--db", str(db), "-o", str(first)).returncode == 0
    other = tmp_path / "o.sqlite"
    assert cli("import", "--db", str(other), str(first)).returncode == 0
    again = tmp_path / "b.jsonl"
    assert cli("export", "--db", str(other), "1", "-o", str(again)).returncode == 0
    assert again.read_bytes() == first.read_bytes()
    from acp_proxy.protocol.frames import Direction
    from acp_proxy.store.reader import Store

    a, b = Store(db), Store(other)
    try:
        for d in Direction:
            assert b.stream_bytes(1, d) == a.stream_bytes(a.capture(None)["id"], d)
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b'{"seq":0,"direction":"c2a","t_ns":0,"text":"{}"}\nnot json\n', "line 2"),
        (b'{"seq":0,"direction":"sideways","t_ns":0,"text":"{}"}\n', "line 1"),
        (b'{"seq":0,"direction":"c2a","t_ns":0}\n', "line 1: missing 'base64'"),
        (b'{"seq":1,"direction":"c2a","t_ns":0,"text":"{}"}\n', "line 1: frame seq 1"),
        (b'{"seq":0,"direction":"c2a","t_ns":0,"base64":"!!"}\n', "line 1"),
        (b"", "no frames"),
    ],
)
def test_bad_files_are_one_error_naming_the_line(
    content: bytes, problem: str, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(content)
    db = tmp_path / "x.sqlite"
    r = cli("import", "--db", str(db), str(bad))
    err = r.stderr.decode()
    assert r.returncode == 2 and problem in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1
    assert not db.exists()  # nothing written for a bad file

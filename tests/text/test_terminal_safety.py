"""Peer strings never reach the user's terminal as controls: every text command shows them
escaped, and JSON output carries no raw C1 either. The recording itself is exact."""

from __future__ import annotations

import json
import select
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.hostile import EVIL, hostile_session, raw_controls, record_script
from support.paths import PACKAGE
from support.proc import PROXY, db_rows

from acp_proxy.text.safe import json_visible, json_visible_bytes, visible

VIEWS = ["turns", "tools", "permissions", "terminals", "diffs", "files", "sessions"]
TEXT_COMMANDS = [
    ["captures"],
    ["show"],
    ["show", "--wall"],
    ["show", "--stderr"],
    ["tail", "-n", "100"],
    ["tools"],
    ["terminals"],
    ["diffs"],
    *[["show", "--view", v] for v in VIEWS],
]
JSON_COMMANDS = [
    ["captures", "--json"],
    ["show", "--json"],
    ["tail", "--json", "-n", "100"],
    ["tools", "--json"],
    ["terminals", "--json"],
    ["diffs", "--json"],
    *[["show", "--view", v, "--json"] for v in VIEWS],
]


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("hostile")
    db = tmp / "rec.sqlite"
    r = record_script(db, tmp, hostile_session("/work/project"), extra=["--label", "l" + EVIL])
    assert r.returncode == 0, r.stderr
    return db


def _run(db: Path, args: list[str]) -> subprocess.CompletedProcess[bytes]:
    r = subprocess.run([*PROXY, *args, "--db", str(db)], capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r


def test_the_recording_keeps_the_controls_as_sent(hostile_db: Path) -> None:
    raws = b"".join(bytes(r[0]) for r in db_rows(hostile_db, "SELECT raw FROM messages"))
    assert b"\x1b]0;not json\x07" in raws and "\x9b2J".encode() in raws
    stderr = b"".join(bytes(r[0]) for r in db_rows(hostile_db, "SELECT data FROM stderr"))
    assert b"agent log \x1b]52;c;" in stderr


@pytest.mark.parametrize("args", TEXT_COMMANDS, ids=" ".join)
def test_text_commands_show_controls_escaped(hostile_db: Path, args: list[str]) -> None:
    r = _run(hostile_db, args)
    assert raw_controls(r.stdout) == [] and raw_controls(r.stderr) == []
    assert b"\\x1b" in r.stdout  # the hostile strings are shown, as escapes


@pytest.mark.parametrize("args", JSON_COMMANDS, ids=" ".join)
def test_json_output_carries_no_raw_controls(hostile_db: Path, args: list[str]) -> None:
    r = _run(hostile_db, args)
    assert raw_controls(r.stdout) == [] and raw_controls(r.stderr) == []
    text = r.stdout.decode()
    values = (
        [json.loads(line) for line in text.splitlines()]
        if args[0] == "tail"
        else [json.loads(text)]
    )
    assert any(EVIL in s for s in _strings(values))  # the same values, escaped on the wire


def _strings(v: Any) -> Iterator[str]:
    if isinstance(v, str):
        yield v
    elif isinstance(v, dict):
        for k, x in v.items():
            yield k
            yield from _strings(x)
    elif isinstance(v, list):
        for x in v:
            yield from _strings(x)


def test_show_stderr_prints_the_agent_stderr_escaped(hostile_db: Path) -> None:
    out = _run(hostile_db, ["show", "--stderr"]).stdout.decode()
    assert "agent log \\x1b]52;c;cHduZWQ=\\x07" in out
    assert "\\u009b2J" in out


def test_patch_export_notes_are_escaped(hostile_db: Path) -> None:
    r = _run(hostile_db, ["export", "--format", "patch"])
    assert b"skipped /elsewhere/" in r.stderr
    assert raw_controls(r.stderr) == []


def test_jsonl_export_has_no_raw_c1_and_round_trips(hostile_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "c.jsonl"
    _run(hostile_db, ["export", "-o", str(out)])
    data = out.read_bytes()
    assert raw_controls(data) == []
    lines = [json.loads(line) for line in data.splitlines()]
    texts = [x["text"] for x in lines if "record" not in x]
    stored = [bytes(r[0]).decode() for r in db_rows(hostile_db, "SELECT raw FROM messages")]
    assert texts == stored


def _read_until(proc: subprocess.Popen[bytes], marker: bytes, out: bytes = b"") -> bytes:
    assert proc.stdout is not None
    deadline = time.monotonic() + 60  # a bound on waiting, not a measurement
    while marker not in out and time.monotonic() < deadline and proc.poll() is None:
        if select.select([proc.stdout], [], [], 0.5)[0]:
            out += proc.stdout.read1(1 << 16)  # type: ignore[attr-defined]
    return out


def test_tail_follow_escapes_new_frames(tmp_path: Path) -> None:
    db = tmp_path / "live.sqlite"
    record_script(db, tmp_path, [("c2a", {"jsonrpc": "2.0", "method": "first"})])
    tail = subprocess.Popen(
        [*PROXY, "tail", "-f", "-n", "1", "--db", str(db), "--interval", "0.05"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        out = _read_until(tail, b"first")  # history printed: what follows is followed
        assert b"first" in out
        record_script(db, tmp_path, hostile_session("/work/project"))
        out = _read_until(tail, b"end_turn", out)
    finally:
        tail.terminate()
        tail.wait(30)
    assert b"end_turn" in out
    assert raw_controls(out) == []
    assert b"custom\\x1b]52;c;" in out


def test_visible_and_json_visible() -> None:
    assert visible("a\x1b]0;t\x07b\x9b2J\r\x7f\tc\nd") == "a\\x1b]0;t\\x07b\\u009b2J\\r\\x7f\tc\nd"
    assert visible("plain ⇄ text") == "plain ⇄ text"
    text = json.dumps({"k": "\x85\x9f\x7f é"}, ensure_ascii=False)
    assert json_visible(text) == '{"k": "\\u0085\\u009f\\u007f é"}'
    assert json.loads(json_visible(text)) == json.loads(text)
    assert json_visible_bytes(text.encode()) == json_visible(text).encode()
    assert json_visible_bytes(b'{"a":"\xc3\xa9"}') == b'{"a":"\xc3\xa9"}'


def test_commands_print_text_only_through_the_one_helper() -> None:
    """``cli.common.echo`` is where text is made safe; no command prints around it."""
    import ast

    cli = PACKAGE / "cli"
    found = []
    for path in sorted(cli.glob("*.py")):
        if path.name == "common.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                f = node.func
                name = ast.unparse(f)
                if name in ("click.echo", "print", "click.secho", "sys.stderr.write"):
                    found.append(f"{path.name}:{node.lineno} {name}")
    assert found == []

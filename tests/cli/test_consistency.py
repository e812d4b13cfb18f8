"""The same conventions everywhere: turns numbered alike in every view, timeline columns
aligned for every kind and seq width, Ctrl-C exits 130 without "Aborted!", and exports
private (0600) however they are written."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest
from support.big import record_flood
from support.demo import demo_database
from support.proc import PROXY

from acp_proxy.protocol.frames import Direction, Frame, Opcode
from acp_proxy.store.reader import StoredFrame
from acp_proxy.text.timeline import event_line, frame_line, seq_width, stderr_parts


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("demo") / "rec.sqlite"
    demo_database(db)
    return db


def _run(*args: str) -> str:
    return subprocess.run(
        [*PROXY, *args], capture_output=True, text=True, check=True, timeout=120
    ).stdout


def test_turns_are_numbered_alike_everywhere(demo_db: Path, tmp_path: Path) -> None:
    text = _run("show", "--db", str(demo_db), "--view", "turns")
    numbers = [int(n) for n in re.findall(r"^turn (\d+) ", text, re.M)]
    assert numbers == [1, 2]
    turns = json.loads(_run("show", "--db", str(demo_db), "--view", "turns", "--json"))
    assert [t["index"] for t in turns] == numbers
    page = tmp_path / "p.html"
    _run("export", "--db", str(demo_db), "--format", "html", "-o", str(page))
    table = page.read_text().split("<h2>Turns</h2>")[1].split("</table>")[0]
    assert [int(n) for n in re.findall(r"<tr><td class=num>(\d+)</td>", table)] == numbers
    # replay names the turns it compares the same way
    from acp_proxy.cli.views import load_frames
    from acp_proxy.replay.core.compare import summarise_run
    from acp_proxy.replay.core.match import parse_messages

    run = summarise_run(parse_messages(load_frames(demo_db, None)))
    assert [int(t.label.split()[1]) for t in run.turns] == numbers


def _frame(seq: int, kind: str, method: str | None, opcode: Opcode | None = None) -> StoredFrame:
    return StoredFrame(
        capture_id=1,
        frame=Frame(seq, Direction.AGENT_TO_CLIENT, seq * 1000, b"{}", True, opcode),
        size=2, kind=kind, method=method, msg_id="1" if kind != "notification" else None,
        session_id=None, update_kind=None, tool_call_id=None, terminal_id=None,
        error_code=None, anomalies=(), request_seq=None, latency_ns=None, rowid=seq,
    )  # fmt: skip


@pytest.mark.parametrize("last_seq", [9, 99_999, 1_234_567])
def test_timeline_columns_stay_aligned(last_seq: int) -> None:
    width = seq_width(last_seq)
    kinds = ["request", "notification", "response", "error", "batch", "invalid"]
    lines = [
        frame_line(_frame(seq, kind, "m/x", op), None, width)
        for seq in (0, 7, last_seq)
        for kind in kinds
        for op in (None, Opcode.TEXT, Opcode.BINARY)
    ]
    arrows = {line.index("←") for line in lines}
    labels = {line.index("m/x") for line in lines}
    assert len(arrows) == 1 and len(labels) == 1, lines
    others = [
        event_line({"t_ns": 5, "kind": "exit", "detail": "{}"}, width),
        event_line({"t_ns": 5, "kind": "client_eof", "detail": None}, width),
        str(stderr_parts(5, b"boom\n", width)[0]),
    ]
    assert {line.index("·") for line in others} == arrows
    assert {
        line.index(k) for line, k in zip(others, ["exit", "client_eof", "stderr"], strict=True)
    } == {arrows.pop() + 2}
    assert "agent exited ?" in others[0] and "client closed stdin" in others[1]


def _interrupted(args: list[str], ready: object) -> subprocess.CompletedProcess[bytes]:
    proc = subprocess.Popen([*PROXY, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    if ready == "output":
        proc.stdout.read(1)  # it is printing
    else:
        assert isinstance(ready, Path)
        deadline = time.monotonic() + 60  # a bound on waiting, not a measurement
        while not (ready.exists() and ready.stat().st_size) and time.monotonic() < deadline:
            time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


@pytest.fixture(scope="module")
def big_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("big") / "rec.sqlite"
    record_flood(db, 100_000)
    return db


@pytest.mark.parametrize(
    "args",
    [["show"], ["show", "--json"], ["tail", "-n", "100000"], ["export", "--format", "jsonl"]],
    ids=" ".join,
)
def test_ctrl_c_exits_130_without_aborted(big_db: Path, args: list[str]) -> None:
    r = _interrupted([*args, "--db", str(big_db)], "output")
    assert r.returncode == 130, r.stderr
    assert b"Aborted" not in r.stderr and b"Traceback" not in r.stderr


def test_ctrl_c_during_an_export_to_a_file(big_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "x.html"
    r = _interrupted(["export", "--db", str(big_db), "--format", "html", "-o", str(out)], out)
    assert r.returncode == 130
    assert b"Aborted" not in r.stderr and b"Traceback" not in r.stderr


@pytest.mark.parametrize(
    "fmt", [["jsonl"], ["html"], ["patch"], ["asciicast", "--terminal", "term_1"]], ids=str
)
def test_exports_are_private_however_written(demo_db: Path, tmp_path: Path, fmt: list[str]) -> None:
    args = [*PROXY, "export", "--db", str(demo_db), "--format", *fmt]
    made = tmp_path / "o.out"
    subprocess.run([*args, "-o", str(made)], check=True, capture_output=True)
    assert stat.S_IMODE(made.stat().st_mode) == 0o600
    redirected = tmp_path / "r.out"
    fd = os.open(redirected, os.O_WRONLY | os.O_CREAT, 0o644)  # as a shell's `>` would
    os.fchmod(fd, 0o644)
    try:
        subprocess.run(args, stdout=fd, check=True, stderr=subprocess.PIPE)
    finally:
        os.close(fd)
    assert stat.S_IMODE(redirected.stat().st_mode) == 0o600
    assert redirected.read_bytes() == made.read_bytes()

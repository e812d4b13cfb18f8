"""The Python API (docs/api.md): a database and a jsonl export read the same way, each view
as the command line shows it, errors as the documented error types, and hostile captures
read through every method without a crash."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.cause import UNIQUE, failing_capture
from support.messages import frame_bytes, frames_of, import_frames, initialize
from support.paths import RECORDINGS
from support.proc import PROXY

import acp_proxy
from acp_proxy.api import Capture, Event, FileChange, Frame, StderrLine, ToolCall, Turn
from acp_proxy.errors import StoreError, UsageError

DEMO = RECORDINGS / "demo-v1.jsonl"


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("api") / "demo.sqlite"
    subprocess.run([*PROXY, "import", str(DEMO), "--db", str(db)], check=True,
                   capture_output=True)  # fmt: skip
    return db


def cli_json(db: Path | str, *args: str) -> object:
    out = subprocess.run([*PROXY, *args, "--db", str(db), "--json"], capture_output=True,
                         text=True, check=True).stdout  # fmt: skip
    return json.loads(out)


@pytest.mark.parametrize("where", ["db", "file"])
def test_a_database_and_an_export_read_alike(demo_db: Path, where: str) -> None:
    with acp_proxy.open(demo_db if where == "db" else DEMO) as rec:
        (cap,) = rec.captures()
        assert isinstance(cap, Capture) and rec.latest().uid == cap.uid
        assert cap.transport == "stdio" and cap.protocol_version == 1
        assert cap.agent_info["name"] == "demo-agent"  # JSON columns parsed
        assert cap.status == "exit 0" and cap.ended_by == "agent" and not cap.live
        frames = list(cap.frames())
        assert len(frames) == cap.message_count == 46 and isinstance(frames[0], Frame)
        assert (
            frames[0].method == "initialize" and frames[0].value["params"]["protocolVersion"] == 1
        )
        assert frames[1].partner == 0 and frames[1].latency_ms is not None
        assert [f.method for f in cap.frames(method="fs/*", kind="request")] == [
            "fs/read_text_file", "fs/write_text_file",
        ]  # fmt: skip
        turns = cap.turns()
        assert all(isinstance(t, Turn) for t in turns)
        assert [t.stop_reason for t in turns] == ["end_turn", "cancelled"]
        tools = cap.tool_calls()
        assert all(isinstance(t, ToolCall) for t in tools)
        assert tools[2].statuses == ("pending", "in_progress", "completed")
        (term,) = cap.terminals()
        assert term.exit_code == 0 and "3 passed in 0.03s" in term.screen
        diffs = cap.diffs()
        assert all(isinstance(c, FileChange) for c in diffs) and diffs[1].applies == diffs[0].seq
        assert cap.findings() == []
        assert all(isinstance(e, Event) for e in cap.events())


def test_each_view_is_the_commands_json(demo_db: Path) -> None:
    with acp_proxy.open(demo_db) as rec:
        cap = rec.capture(1)
        assert [t.data for t in cap.turns()] == cli_json(demo_db, "show", "1", "--view", "turns")
        assert [t.data for t in cap.tool_calls()] == cli_json(demo_db, "tools", "1")
        assert [t.data for t in cap.terminals()] == cli_json(demo_db, "terminals", "1")
        assert [c.data for c in cap.diffs()] == cli_json(demo_db, "diffs", "1")


def test_stderr_events_and_search_carry_the_cause(tmp_path: Path) -> None:
    db = tmp_path / "cause.sqlite"
    failing_capture(db, tmp_path)
    with acp_proxy.open(db) as rec:
        cap = rec.latest()
        (line,) = cap.stderr()
        assert isinstance(line, StderrLine) and UNIQUE in line.text and "\x1b" not in line.text
        assert b"\x1b[1;31mERROR" in line.raw  # the exact bytes too
        assert next(e.line for e in cap.events()).startswith("agent started")
        (turn,) = cap.turns()
        assert turn.error["code"] == -32603
        assert {h.source for h in rec.search("root/sudo")} == {"stderr"}
        assert rec.search(UNIQUE, capture=cap.id)


def test_errors_are_the_documented_ones(tmp_path: Path, demo_db: Path) -> None:
    with pytest.raises(StoreError):
        acp_proxy.open(tmp_path / "nothing-here.sqlite")
    bad = tmp_path / "notes.txt"
    bad.write_text("hello\n")
    with pytest.raises(UsageError):
        acp_proxy.open(bad)
    with acp_proxy.open(demo_db) as rec, pytest.raises(UsageError):
        rec.capture(42)
    with acp_proxy.open(DEMO) as rec, pytest.raises(UsageError):
        rec.search("anything")


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("api-hostile")


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 2), st.lists(frame_bytes(), max_size=25))
def test_a_hostile_capture_reads_through_every_method(
    work: Path, version: int, items: list[tuple[object, bytes, object]]
) -> None:
    init = [(d, json.dumps(m).encode(), None) for d, m in initialize(version)]
    db = work / "hostile.sqlite"
    db.unlink(missing_ok=True)
    import_frames(db, frames_of([*init, *items]), work)  # type: ignore[list-item]
    with acp_proxy.open(db) as rec:
        cap = rec.latest()
        frames = list(cap.frames())
        assert [f.raw for f in frames] == [raw for _, raw, _ in [*init, *items]]
        for f in frames:
            _ = f.value, f.text
        cap.turns(), cap.tool_calls(), cap.terminals(), cap.diffs(), cap.sessions()
        cap.findings(), cap.stderr(), cap.events(), cap.status

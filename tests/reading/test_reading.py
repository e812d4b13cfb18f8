"""The reading library (acp_proxy/reading): what the commands print, a Python caller gets
as values — from the database or a jsonl export alike, a capture resolved once."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support.paths import RECORDINGS
from support.proc import PROXY

from acp_proxy.reading import (
    EventItem,
    FrameItem,
    StderrItem,
    Timeline,
    open_capture,
    reconstruction,
)

DEMO = RECORDINGS / "demo-v1.jsonl"


def _cli(*args: str) -> str:
    return subprocess.run(
        [*PROXY, *args], capture_output=True, text=True, check=True, timeout=120
    ).stdout


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("reading") / "rec.sqlite"
    _cli("import", "--db", str(db), str(DEMO))
    return db


def test_a_timeline_is_typed_items_in_time_order(demo_db: Path) -> None:
    with open_capture(demo_db, None) as cap:
        timeline = Timeline(cap)
        items = list(timeline.items(timeline.frames()))
    kinds = {type(i) for i in items}
    assert FrameItem in kinds and EventItem in kinds and kinds <= {FrameItem, EventItem, StderrItem}
    assert [i.t_ns for i in items] == sorted(i.t_ns for i in items)
    seqs = [i.frame.seq for i in items if isinstance(i, FrameItem)]
    assert seqs == list(range(len(seqs)))


def test_the_database_and_the_export_read_alike(demo_db: Path) -> None:
    def read(db: Path, ref: str | None) -> tuple[list[int], list[str], list[int]]:
        with open_capture(db, ref) as cap:
            timeline = Timeline(cap, at=20)
            frames = [f.seq for f in timeline.frames()]
            events = [i.event["kind"] for i in timeline.items() if isinstance(i, EventItem)]
            return frames, events, sorted(timeline.check_marks())

    assert read(demo_db, None) == read(demo_db, str(DEMO))
    frames, _events, _marks = read(demo_db, None)
    assert frames == list(range(21))


def test_what_a_command_prints_a_caller_gets(demo_db: Path) -> None:
    printed = json.loads(_cli("tools", "--db", str(demo_db), "--json", "--at", "40"))
    with open_capture(demo_db, "-1") as cap:
        r = reconstruction(cap, at=40)
    assert [t["toolCallId"] for t in printed] == [t.tool_call_id for t in r.tool_calls.values()]


def test_a_capture_is_resolved_once(demo_db: Path, tmp_path: Path) -> None:
    """The latest capture, opened, stays the one read: a newer one recorded meanwhile does
    not lend it its end or its stderr."""
    db = tmp_path / "two.sqlite"
    _cli("import", "--db", str(db), str(DEMO))
    with open_capture(db, "-1") as cap:
        first = cap.capture["uid"]
        _cli("import", "--db", str(db), str(RECORDINGS / "sdk-v1.jsonl"))
        assert cap.capture["uid"] == first
        assert cap.end_notes().reason is not None
        frames = [f.seq for f in Timeline(cap).frames()]
    with open_capture(db, "-1") as newer:
        assert newer.capture["uid"] != first
        assert [f.seq for f in Timeline(newer).frames()] != frames

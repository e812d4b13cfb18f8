"""asciicast v2 export of a terminal: header, recorded timing, snapshots."""

from __future__ import annotations

import json
from pathlib import Path

from support.paths import DATA, RECORDINGS

from acp_proxy.export.core.asciicast import asciicast
from acp_proxy.export.jsonl import read_jsonl
from acp_proxy.reconstruct import reconstruct, render_screen

DATA = DATA / "reconstruct"
RECORDINGS = RECORDINGS


def _cast(path: Path, key: tuple[str, str]) -> tuple[dict[str, object], list[list[object]]]:
    with open(path, "rb") as f:
        r = reconstruct(read_jsonl(f))
    lines = asciicast(r.terminals[key]).splitlines()
    return json.loads(lines[0]), [json.loads(line) for line in lines[1:]]


def test_header_uses_the_terminal_size_and_events_keep_recorded_timing() -> None:
    header, events = _cast(DATA / "v2-terminals.jsonl", ("sess_1", "term_1"))
    assert header == {
        "version": 2,
        "width": 20,
        "height": 5,
        "env": {"TERM": "xterm-256color"},
        "title": "cargo test",
    }
    times = [float(str(e[0])) for e in events]
    assert times == sorted(times) and times[0] > 0
    assert all(e[1] == "o" for e in events)
    # the fixture waits 5 ms before its third chunk
    assert round(times[2] - times[1], 3) == 0.005


def test_a_snapshot_clears_the_screen_and_playback_matches_the_screen_view() -> None:
    _, events = _cast(DATA / "v2-terminals.jsonl", ("sess_1", "term_1"))
    texts = [str(e[2]) for e in events]
    assert texts[3].startswith("\x1bcsnapshot line")
    played = "".join(texts)
    after_reset = played[played.rindex("\x1bc") + 2 :]
    assert render_screen(after_reset, 20) == [
        "snapshot line",
        "after ✔ done, this l",
        "ine is longer than t",
        "wenty columns",
    ]


def test_v1_output_is_played_with_line_feeds_as_crlf() -> None:
    header, events = _cast(RECORDINGS / "demo-v1.jsonl", ("sess_demo_1", "term_1"))
    assert (header["width"], header["height"]) == (80, 24)
    [event] = events
    assert "3 tests\r\n\rrunning" in str(event[2])

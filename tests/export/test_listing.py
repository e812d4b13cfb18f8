"""The JSON views written item by item (acp_proxy/export/listing.py): from the database they
fold only the frames they need, and what they print is byte for byte what the fold of every
frame prints — for the bundled captures, the demo recorded live, hostile captures, and the
captures where the recorder's fields do not say enough (then every frame is folded)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from support.messages import (
    A,
    C,
    frame_bytes,
    frames_of,
    import_after_initialize,
    import_frames,
    initialize,
)
from support.paths import DATA, RECORDINGS
from support.views import assert_views_stream, folded, streamed, written

from acp_proxy.export.listing import VIEWS, Spool, item_bytes, write_list
from acp_proxy.export.load import import_file
from acp_proxy.reconstruct.stream import NotStreamable
from acp_proxy.store.refs import Source, resolve
from acp_proxy.text.safe import json_bytes

CAPTURES = sorted(RECORDINGS.glob("*.jsonl")) + sorted((DATA / "reconstruct").glob("*.jsonl"))


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_bundled_captures_are_streamed_as_every_frame_folds(path: Path, tmp_path: Path) -> None:
    db = tmp_path / "views.sqlite"
    [imported] = import_file(db, path)
    ats = tuple(range(0, imported.frames, max(1, imported.frames // 10)))
    assert_views_stream(db, str(imported.capture_id), ats)
    source = resolve(str(path), db)  # the file itself: every frame is folded
    for view in VIEWS:
        assert written(source, view) == folded(source, view)


def test_the_demo_recorded_live_is_streamed_as_every_frame_folds(tmp_path: Path) -> None:
    db = tmp_path / "demo.sqlite"
    subprocess.run([sys.executable, "-m", "acp_proxy", "demo", "--db", str(db)], check=True,
                   capture_output=True)  # fmt: skip
    assert_views_stream(db, None, (5, 12, 20))


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hostile")


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 2), st.lists(frame_bytes(), max_size=30), st.integers(0, 35))
def test_hostile_captures_print_what_every_frame_folds_to(
    work: Path, version: int, items: list[tuple[object, bytes, object]], at: int
) -> None:
    db = work / "hostile.sqlite"
    source = resolve(str(import_after_initialize(db, work, version, items)), db)  # type: ignore[arg-type]
    try:
        for view in VIEWS:
            for upto in (None, at):
                try:
                    got = streamed(source, view, upto)
                    event("streamed")
                except NotStreamable:
                    got = written(source, view, upto)
                    event("every frame folded")
                assert got == folded(source, view, upto), (view, upto)
    finally:
        source.close()


def _capture(tmp_path: Path, version: int, *messages: tuple[object, object]) -> Source:
    lines = [*initialize(version), *messages]
    raws = [(d, m if isinstance(m, bytes) else json.dumps(m).encode(), None) for d, m in lines]
    db = tmp_path / "c.sqlite"
    return resolve(str(import_frames(db, frames_of(raws), tmp_path)), db)  # type: ignore[arg-type]


def _update(**u: object) -> dict[str, object]:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": u}}


@pytest.mark.parametrize(
    "view, messages",
    [
        (  # the permission applies to params.toolCall; the recorder names subject's id
            "tools",
            [
                (A, _update(sessionUpdate="tool_call_update", toolCallId="a", title="x")),
                (A, {"jsonrpc": "2.0", "id": 7, "method": "session/request_permission",
                     "params": {"sessionId": "s", "toolCall": {"toolCallId": "a", "title": "y"},
                                "subject": {"toolCallId": "b"}, "options": []}}),
            ],
        ),
        (  # a tool call id sent as a number is still the tool call "5" to the fold
            "tools",
            [
                (A, _update(sessionUpdate="tool_call_update", toolCallId="5")),
                (C, {"jsonrpc": "2.0", "method": "tool_call/cancel",
                     "params": {"sessionId": "s", "toolCallId": 5}}),
            ],
        ),
        (  # a terminal shown by a tool call after its own last frame
            "terminals",
            [
                (A, _update(sessionUpdate="terminal_update", terminalId="t", command="ls")),
                (A, _update(sessionUpdate="tool_call_update", toolCallId="a",
                            content=[{"type": "terminal", "terminalId": "t"}])),
            ],
        ),
        (  # a batch: its entries' answers cannot be found by a frame's seq
            "diffs",
            [
                (A, [{"jsonrpc": "2.0", "id": 1, "method": "fs/write_text_file",
                      "params": {"sessionId": "s", "path": "/w/f", "content": "x"}}]),
                (C, {"jsonrpc": "2.0", "id": 1, "result": {}}),
            ],
        ),
    ],
    ids=["permission", "number-id", "late-anchor", "batch"],
)  # fmt: skip
def test_what_the_recorder_did_not_name_is_folded_from_every_frame(
    tmp_path: Path, view: str, messages: list[tuple[object, object]]
) -> None:
    source = _capture(tmp_path, 2, *messages)
    with pytest.raises(NotStreamable):
        streamed(source, view)
    expected = folded(source, view)
    assert written(source, view) == expected and expected != b"[]\n"


def test_the_spool_writes_items_in_their_order_whatever_order_they_came_in() -> None:
    items = [{"n": n, "text": "é\u0085" * n} for n in range(6)]
    spool = Spool()
    for n in (3, 0, 5, 1):  # 2 and 4 belong to another session: never added
        spool.add(n, items[n])
    out = io.BytesIO()
    spool.copy_to(out)
    in_order = [item_bytes(items[n]) for n in (0, 1, 3, 5)]
    assert len(spool) == 4 and spool.items(1, 3) == in_order[1:3]  # a page, read back alone
    assert spool.items(0, 99) == in_order and spool.items(4, 5) == []
    spool.close()
    assert out.getvalue() == json_bytes([items[n] for n in (0, 1, 3, 5)]) + b"\n"
    empty = Spool()
    out = io.BytesIO()
    empty.copy_to(out)
    empty.close()
    assert out.getvalue() == json_bytes([]) + b"\n"


@given(st.lists(st.dictionaries(st.text(max_size=3), st.text(max_size=5) | st.integers(-9, 9))))
def test_a_list_written_item_by_item_is_the_list_as_one_document(items: list[object]) -> None:
    out = io.BytesIO()
    write_list(out, items)
    assert out.getvalue() == json_bytes(items) + b"\n"
    assert all(item_bytes(i) in out.getvalue() for i in items)


def test_an_anchor_or_diff_spelled_with_escapes_is_read(tmp_path: Path) -> None:
    # "terminal" and "diff" written as JSON escapes are the same strings to the fold
    anchor = _update(sessionUpdate="tool_call_update", toolCallId="a",
                     content=[{"type": "terminal", "terminalId": "t"}])  # fmt: skip
    diff = _update(sessionUpdate="tool_call_update", toolCallId="a",
                   content=[{"type": "diff", "path": "/w/f", "newText": "x"}])  # fmt: skip
    escaped = [
        json.dumps(m).replace('"terminal"', '"termin\\u0061l"').replace('"diff"', '"\\u0064iff"')
        for m in (anchor, diff)
    ]
    assert "\\u0061" in escaped[0] and "\\u0064" in escaped[1]
    source = _capture(
        tmp_path,
        1,
        (A, escaped[0].encode()),
        (A, _update(sessionUpdate="terminal_update", terminalId="t", command="ls")),
        (A, escaped[1].encode()),
    )
    for view in VIEWS:
        assert streamed(source, view) == folded(source, view)
    assert json.loads(streamed(source, "terminals"))[0]["toolCallIds"] == ["a"]
    assert json.loads(streamed(source, "diffs"))[0]["path"] == "/w/f"

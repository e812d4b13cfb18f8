"""The streamed views (acp_proxy/reconstruct/stream.py): items finish as their last frame is
folded, an answer still to come keeps a terminal open, and what cannot be exact says so.
Rows are written here as the database gives them; tests/export/test_listing.py compares
whole captures read from a database with the fold of every frame."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from acp_proxy.reconstruct.stream import Hints, NotStreamable, Row, stream_view

C2A, A2C, ODD = 0, 1, 2


def _update(sid: str, **u: object) -> bytes:
    msg = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": u}}
    return json.dumps(msg).encode()


def _rows(*frames: tuple[int, bytes, int | None]) -> list[Row]:
    return [(seq, how, seq * 1000, raw, rseq) for seq, (how, raw, rseq) in enumerate(frames)]


def test_an_item_is_finished_once_its_last_frame_is_folded() -> None:
    frames = []
    for n in range(20):
        for status in ("pending", "completed"):
            update = _update(
                "s", sessionUpdate="tool_call_update", toolCallId=f"c{n}", status=status
            )
            frames.append((A2C, update, None))
    rows = _rows(*frames)
    hints = Hints(tools={f"c{n}": 2 * n + 1 for n in range(20)})
    read = 0

    def counted() -> Iterator[Row]:
        nonlocal read
        for row in rows:
            read += 1
            yield row

    items = stream_view("tools", counted(), hints)
    position, first = next(items)
    assert (position, first["toolCallId"], first["status"], read) == (0, "c0", "completed", 2)
    assert [p for p, _ in items] == list(range(1, 20))


def test_a_tool_call_without_a_hint_is_written_at_the_end() -> None:
    rows = _rows(
        (A2C, _update("s", sessionUpdate="tool_call_update", toolCallId="a"), None),
        (A2C, _update("s", sessionUpdate="tool_call_update", toolCallId="b"), None),
    )
    out = list(stream_view("tools", rows, Hints(tools={"b": 1})))
    assert [(p, i["toolCallId"]) for p, i in out] == [(1, "b"), (0, "a")]


def test_an_answer_still_to_come_keeps_its_terminal_open() -> None:
    # the last frame naming "t" is the terminal/output request; its answer changes it
    ask = {"jsonrpc": "2.0", "id": "o", "method": "terminal/output",
           "params": {"sessionId": "s", "terminalId": "t"}}  # fmt: skip
    rows = _rows(
        (A2C, json.dumps({**ask, "id": "c", "method": "terminal/create",
                          "params": {"sessionId": "s", "command": "ls"}}).encode(), None),
        (C2A, b'{"jsonrpc":"2.0","id":"c","result":{"terminalId":"t"}}', 0),
        (A2C, json.dumps(ask).encode(), None),
        (C2A, b'{"jsonrpc":"2.0","id":"o","result":{"output":"ok","truncated":false}}', 2),
    )  # fmt: skip
    [(_, t)] = stream_view("terminals", rows, Hints(terminals={"t": 2}))
    assert (t["command"], t["text"]) == ("ls", "ok")
    assert [e["event"] for e in t["timeline"]] == ["create", "output"]


def test_a_frame_touching_an_item_already_written_stops_the_stream() -> None:
    rows = _rows(
        (A2C, _update("s", sessionUpdate="tool_call_update", toolCallId="a"), None),
        (A2C, _update("s", sessionUpdate="tool_call_update", toolCallId="a", title="x"), None),
    )
    with pytest.raises(NotStreamable, match="tool call 'a' changed after its last frame"):
        list(stream_view("tools", rows, Hints(tools={"a": 0})))


@pytest.mark.parametrize(
    "row",
    [(ODD, b"{}", None), (A2C, b'[{"jsonrpc":"2.0","method":"x"}]', None)],
    ids=["odd", "batch"],
)
def test_a_batch_or_a_frame_not_classified_whole_stops_the_stream(
    row: tuple[int, bytes, int | None],
) -> None:
    with pytest.raises(NotStreamable):
        list(stream_view("diffs", _rows(row), Hints()))


def test_items_of_other_sessions_keep_their_place_but_are_not_written() -> None:
    rows = _rows(
        (A2C, _update("s", sessionUpdate="terminal_update", terminalId="t"), None),
        (A2C, _update("u", sessionUpdate="terminal_update", terminalId="t"), None),
        (A2C, _update("s", sessionUpdate="terminal_update", terminalId="v"), None),
    )
    out = stream_view("terminals", rows, Hints(terminals={"t": 1, "v": 2}), session="s")
    assert sorted((p, i["sessionId"], i["terminalId"]) for p, i in out) == [
        (0, "s", "t"),
        (2, "s", "v"),
    ]

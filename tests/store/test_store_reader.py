"""Reading a capture for a view (acp_proxy/store/reader.py): the frames it asks for, by the
fields the recorder derived, and the last frame naming each tool call and terminal."""

from __future__ import annotations

import json

import pytest
from support.messages import A, C, frames_of, import_frames

from acp_proxy.protocol.frames import Opcode
from acp_proxy.protocol.skim import SKIM_ABOVE
from acp_proxy.store.reader import Store


def _update(**u: object) -> dict[str, object]:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": u}}


def _raw(m: object) -> bytes:
    return json.dumps(m).encode()


MESSAGES = [
    (C, _raw({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}), None),  # 0
    (A, _raw(_update(sessionUpdate="tool_call_update", toolCallId="a",
                     content=[{"type": "terminal", "terminalId": "t"}])), None),  # 1
    (A, _raw(_update(sessionUpdate="tool_call_update", toolCallId="a", status="x")), None),  # 2
    (A, _raw(_update(sessionUpdate="terminal_update", terminalId="t")), None),  # 3
    (A, _raw({"jsonrpc": "2.0", "id": 5, "method": "fs/write_text_file",
              "params": {"sessionId": "s", "path": "/f", "content": ""}}), None),  # 4
    (A, _raw(_update(sessionUpdate="agent_message_chunk")), None),  # 5
    (C, _raw({"jsonrpc": "2.0", "id": 5, "result": {}}), None),  # 6
    (A, _raw([{"jsonrpc": "2.0", "method": "x"}]), None),  # 7: a batch
    (A, _raw({"jsonrpc": "2.0", "method": "y"}), Opcode.BINARY),  # 8
    (A, b'{"jsonrpc":"2.0","method":"z","params":"' + b"x" * SKIM_ABOVE + b'"}', None),  # 9
    (A, _raw(_update(sessionUpdate="tool_call_update", toolCallId="b")), None),  # 10
]  # fmt: skip


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, int]:
    tmp = tmp_path_factory.mktemp("reader")
    db = tmp / "r.sqlite"
    cid = import_frames(db, frames_of(MESSAGES), tmp)  # type: ignore[arg-type]
    return Store(db), cid


def test_a_view_gets_the_frames_it_names_and_every_odd_one(capture: tuple[Store, int]) -> None:
    store, cid = capture
    rows = store.view_frames(
        cid,
        methods={"fs/write_text_file"},
        kinds={"terminal_update"},
        marked={"tool_call_update"},
        markers=(b'"terminal"',),
    )
    got = [(seq, how, request_seq) for seq, how, _, _, request_seq in rows]
    # the answer comes with its request's method; batch, binary and skimmed frames always
    assert got == [(1, 1, None), (3, 1, None), (4, 1, None), (6, 0, 4), (7, 2, None),
                   (8, 2, None), (9, 2, None)]  # fmt: skip
    rows = store.view_frames(cid, methods={"initialize"}, upto_seq=6)
    assert [(seq, raw) for seq, _, _, raw, _ in rows] == [(0, MESSAGES[0][1])]


def test_the_last_frame_naming_each_id(capture: tuple[Store, int]) -> None:
    store, cid = capture
    assert store.last_mentions(cid, "tool_call_id") == {"a": 2, "b": 10}
    assert store.last_mentions(cid, "tool_call_id", upto_seq=9) == {"a": 2}
    assert store.last_mentions(cid, "terminal_id") == {"t": 3}
    with pytest.raises(ValueError, match="no id column"):
        store.last_mentions(cid, "raw")

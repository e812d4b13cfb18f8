"""Huge frames are classified from their head: the envelope's fields, never a false key."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_proxy.protocol.jsonrpc import classify
from acp_proxy.protocol.skim import skim

MESSAGES = [
    {"jsonrpc": "2.0", "id": 7, "method": "fs/write_text_file",
     "params": {"sessionId": "s1", "path": "/p", "content": "x" * 100}},
    {"jsonrpc": "2.0", "id": "a\"b", "method": "session/prompt", "params": {"sessionId": "s2"}},
    {"jsonrpc": "2.0", "method": "session/update",
     "params": {"sessionId": "é✔", "update": {"sessionUpdate": "tool_call_update",
                                              "toolCallId": "tc\\1", "content": []}}},
    {"jsonrpc": "2.0", "method": "session/update",
     "params": {"sessionId": "s", "update": {"sessionUpdate": "terminal_update",
                                             "terminalId": "t9", "output": "…"}}},
    {"jsonrpc": "2.0", "id": 3, "result": {"content": "y" * 50}},
    {"jsonrpc": "2.0", "id": -4, "error": {"code": -32603, "message": "boom"}},
]  # fmt: skip

FIELDS = ("kind", "method", "id", "session_id", "update_kind", "tool_call_id", "terminal_id",
          "error_code")  # fmt: skip


def test_skim_agrees_with_the_full_classification_on_the_envelope() -> None:
    for message in MESSAGES:
        raw = orjson.dumps(message)
        full, head = classify(raw), skim(raw)
        assert {f: getattr(head, f) for f in FIELDS} == {f: getattr(full, f) for f in FIELDS}
        assert "skimmed" in head.anomalies


def test_a_key_written_inside_a_string_is_not_taken() -> None:
    text = '"method":"evil","sessionId":"forged"'
    raw = orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": {"text": text}})
    info = skim(raw)
    assert info.kind == "response" and info.method is None and info.session_id is None


def test_only_the_head_is_needed() -> None:
    raw = orjson.dumps(MESSAGES[0])[:90]  # cut inside params: still a request with its id
    info = skim(raw)
    assert (info.kind, info.id, info.method) == ("request", "7", "fs/write_text_file")


def test_not_json_and_batches() -> None:
    assert skim(b"plain log line").kind == "invalid"
    assert skim(b'[{"jsonrpc":"2.0"}]').kind == "batch"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300) | st.text(max_size=200).map(str.encode))
def test_skim_never_raises_and_fields_are_storable(head: bytes) -> None:
    info = skim(b'{"method":' + head)
    for f in FIELDS[1:-1]:
        value = getattr(info, f)
        if value is not None:
            value.encode("utf-8")  # a lone surrogate would not bind in SQLite

"""Tool calls: v1 tool_call/tool_call_update, v2 upsert rules, content chunks, unknowns."""

from __future__ import annotations

from typing import Any

from support.paths import DATA, RECORDINGS

from acp_proxy.export.jsonl import read_jsonl
from acp_proxy.reconstruct import ToolCall, reconstruct
from acp_proxy.reconstruct.tools import apply_content_chunk, apply_v1, apply_v2
from acp_proxy.reconstruct.views import tools_json

DATA = DATA / "reconstruct"


def _tools(name: str) -> dict[str, dict[str, Any]]:
    with open(DATA / name, "rb") as f:
        r = reconstruct(read_jsonl(f))
    return {t["toolCallId"]: t for t in tools_json(r)}


def test_v2_first_seen_id_starts_at_protocol_defaults() -> None:
    tc = ToolCall("s", "c", 0, 0)
    apply_v2(tc, {"toolCallId": "c"}, 1, 1)
    assert (tc.title, tc.name, tc.kind, tc.status, tc.content, tc.locations) == (
        None,
        None,
        "other",
        "pending",
        [],
        [],
    )
    assert tc.capabilities is None and tc.meta is None


def test_v2_null_clears_and_omitted_is_unchanged() -> None:
    call = _tools("v2-tool-calls.jsonl")["call_a"]
    assert call["title"] is None and call["name"] is None  # cleared with null
    assert call["kind"] == "other"  # null resets kind to other
    assert call["rawInput"] == {"q": "x"}  # never mentioned again: unchanged
    assert call["rawOutput"] is None and call["capabilities"] is None
    assert call["locations"] == [{"path": "/home/u/proj/b.py"}]
    assert call["_meta"] is None  # patched, then cleared with null
    statuses = [s["status"] for s in call["statusHistory"]]
    assert statuses == ["pending", "in_progress", "pending", "paused", "in_progress", "completed"]


def test_v2_meta_is_patched_by_top_level_key() -> None:
    tc = ToolCall("s", "c", 0, 0)
    apply_v2(tc, {"_meta": {"a": 1, "b": {"x": 1}, "c": 3}}, 1, 1)
    apply_v2(tc, {"_meta": {"a": None, "b": {"y": 2}}}, 2, 2)
    assert tc.meta == {"b": {"y": 2}, "c": 3}  # removed, replaced without merging, kept
    apply_v2(tc, {"title": "t"}, 3, 3)
    assert tc.meta == {"b": {"y": 2}, "c": 3}


def test_v2_empty_array_and_null_clear_collections() -> None:
    call = _tools("v2-tool-calls.jsonl")["call_c"]
    assert call["content"] == []
    tc = ToolCall("s", "c", 0, 0)
    apply_v2(tc, {"locations": [{"path": "/a"}], "content": [{"type": "x"}]}, 1, 1)
    apply_v2(tc, {"locations": None, "content": []}, 2, 2)
    assert tc.locations == [] and tc.content == []


def test_content_chunks_append_and_later_content_replaces_them() -> None:
    call = _tools("v2-tool-calls.jsonl")["call_b"]
    assert call["content"] == [
        {"type": "content", "content": {"type": "text", "text": "final"}},
        {"type": "content", "content": {"type": "text", "text": "more"}},
    ]
    tc = ToolCall("s", "c", 0, 0)
    apply_content_chunk(tc, {"content": {"type": "a"}}, 1, 1)
    apply_content_chunk(tc, {"content": {"type": "b"}}, 2, 2)
    assert tc.content == [{"type": "a"}, {"type": "b"}]


def test_custom_kinds_statuses_and_unknown_content_are_kept() -> None:
    with open(DATA / "v2-tool-calls.jsonl", "rb") as f:
        frames = list(read_jsonl(f))
    at = next(fr.seq for fr in frames if b"future_kind" in fr.raw)
    r = reconstruct(frames, at=at)
    call = {t["toolCallId"]: t for t in tools_json(r)}["call_b"]
    assert call["kind"] == "_acme.deploy"
    assert call["statusHistory"][1]["status"] == "_acme.queued"
    assert call["content"] == [
        {"type": "_acme.widget", "payload": {"x": 1}},
        {"type": "content", "content": {"type": "text", "text": "part 1"}},
        {"type": "future_kind", "blob": "?"},
    ]


def test_tool_call_cancel_and_updates_after_idle() -> None:
    tools = _tools("v2-tool-calls.jsonl")
    assert tools["call_b"]["cancelRequestedSeq"] is not None
    assert tools["call_b"]["status"] == "cancelled"
    assert tools["call_e"]["rawOutput"] == {"note": "while idle"}


def test_v1_tool_call_defaults_and_update_semantics() -> None:
    tc = ToolCall("s", "c", 0, 0)
    apply_v1(tc, {"toolCallId": "c", "title": "Read"}, 1, 1, create=True)
    assert (tc.kind, tc.status) == ("other", "pending")
    apply_v1(tc, {"status": "in_progress", "content": [{"type": "x"}]}, 2, 2, create=False)
    apply_v1(tc, {"status": None, "title": None, "content": None}, 3, 3, create=False)
    assert (tc.title, tc.status, tc.content) == ("Read", "in_progress", [{"type": "x"}])
    apply_v1(tc, {"locations": [{"path": "/a", "line": 2}]}, 4, 4, create=False)
    apply_v1(tc, {"locations": [{"path": "/b"}]}, 5, 5, create=False)
    assert tc.locations == [{"path": "/b"}]  # arrays replace
    assert [(loc.path, loc.line, loc.seq) for loc in tc.location_history] == [
        ("/a", 2, 4),
        ("/b", None, 5),
    ]


def test_v1_null_keeps_fields_and_update_before_tool_call_is_flagged() -> None:
    tools = _tools("v1-edges.jsonl")
    assert tools["e1"]["title"] == "Edit main.py" and tools["e1"]["status"] == "failed"
    assert tools["e1"]["content"][0]["type"] == "diff"
    assert tools["ghost"]["anomalies"] == ["update_before_tool_call"]


def test_demo_status_history_has_times() -> None:
    with open(RECORDINGS / "demo-v1.jsonl", "rb") as f:
        r = reconstruct(read_jsonl(f))
    test = {t["toolCallId"]: t for t in tools_json(r)}["call_test"]
    assert [s["status"] for s in test["statusHistory"]] == ["pending", "in_progress", "completed"]
    times = [s["t_ms"] for s in test["statusHistory"]]
    assert times == sorted(times) and test["durationMs"] > 0
    assert test["terminalIds"] == ["term_1"]


def test_malformed_fields_are_ignored_not_applied() -> None:
    """x-deserialize-default-on-error: a bad optional field is dropped (docs/protocol.md §1)."""
    tc = ToolCall("s", "c", 0, 0)
    apply_v2(tc, {"title": "t", "content": [{"type": "x"}], "capabilities": {"cancel": {}}}, 1, 1)
    apply_v2(tc, {"title": 7, "content": "oops", "locations": {}, "capabilities": "no"}, 2, 2)
    assert tc.title == "t" and tc.content == [{"type": "x"}] and tc.capabilities == {"cancel": {}}
    assert tc.updates == 2

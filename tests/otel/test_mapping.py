"""The mapping from frames to spans, on the recorded samples: tree shape, names, the
attributes that matter, v1 and v2 turn ends, trace context from ``_meta``, content only
when asked, and hostile values that never crash it and stay bounded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from support.paths import ROOT

from acp_proxy.export.jsonl import read_jsonl
from acp_proxy.otel.core.fold import CaptureInfo, TraceFold
from acp_proxy.otel.core.mapping import spans
from acp_proxy.otel.core.model import MAX_ARRAY, MAX_CONTENT, MAX_VALUE, SpanData, attr
from acp_proxy.otel.core.otlpjson import encode
from acp_proxy.otel.sdk import readable
from acp_proxy.protocol.frames import Direction, Frame

DEMO = ROOT / "recordings" / "demo-v1.jsonl"
V2 = ROOT / "tests" / "data" / "replay" / "v2_session.jsonl"
START = 1_700_000_000_000_000_000
CONTENT_KEYS = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "acp.terminal.output",
}


def fold(path: Path) -> TraceFold:
    r = TraceFold()
    with open(path, "rb") as f:
        for frame in read_jsonl(f):
            r.feed(frame)
    return r


def mapped(path: Path, *, content: bool = False, uid: str = "cap") -> list[SpanData]:
    return spans(CaptureInfo(uid, START), fold(path), content=content)


def frames_of(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_bytes().splitlines():
        obj = orjson.loads(line)
        out.append({**obj, "body": orjson.loads(obj["text"])})
    return out


def children(all_: list[SpanData], parent: SpanData) -> list[SpanData]:
    return [s for s in all_ if s.parent_id == parent.span_id]


def one(all_: list[SpanData], name: str) -> SpanData:
    found = [s for s in all_ if s.name == name]
    assert len(found) == 1, [s.name for s in all_]
    return found[0]


def test_demo_v1_trace_tree() -> None:
    out = mapped(DEMO)
    assert len({s.trace_id for s in out}) == 1  # one ACP session: one trace
    assert len({s.span_id for s in out}) == len(out)
    root = one(out, "connection demo-agent")
    # the client's traceparent in _meta: our trace joins it, under its span
    assert root.trace_id.hex() == "0af7651916cd43dd8448eb211c80319c"
    assert root.parent_id is not None and root.parent_id.hex() == "b7ad6b7169203331"
    assert root.kind == "server"
    a = root.attributes
    assert a["gen_ai.agent.name"] == "demo-agent"
    assert a["acp.protocol.version"] == 1
    assert a["acp.client.name"] == "demo-editor" or isinstance(a["acp.client.name"], str)
    sid = a["gen_ai.conversation.id"]
    assert isinstance(sid, str) and sid
    assert all(s.attributes.get("gen_ai.conversation.id") == sid for s in out)
    turns = [s for s in children(out, root) if s.name == "invoke_agent demo-agent"]
    assert [t.attributes["gen_ai.response.finish_reasons"] for t in turns] == [
        ["end_turn"],
        ["cancelled"],
    ]
    first = turns[0]
    assert first.kind == "client"
    assert first.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert first.attributes["rpc.method"] == "session/prompt"
    assert first.attributes["rpc.system"] == "jsonrpc"
    assert first.attributes["acp.context.used_tokens"] == 5321
    assert [e.name for e in first.events][:1] == ["acp.first_output"]
    assert turns[1].attributes["acp.turn.cancelled"] is True
    tools = [s for s in children(out, first) if s.name.startswith("execute_tool ")]
    assert [t.name for t in tools] == [
        "execute_tool Read config.json",
        "execute_tool Enable debug in config.json",
        "execute_tool Run the tests",
    ]
    for t in tools:
        assert t.attributes["gen_ai.operation.name"] == "execute_tool"
        assert t.attributes["acp.tool.status"] == "completed"
        assert isinstance(t.attributes["gen_ai.tool.call.id"], str)
        assert [e.name for e in t.events][-1] == "acp.tool.status"
        assert first.start_ns <= t.start_ns <= t.end_ns <= first.end_ns
    run = tools[2]
    perm = one(out, "session/request_permission")
    assert perm.parent_id == run.span_id
    assert perm.attributes["acp.permission.approved"] is True
    assert isinstance(perm.attributes["acp.permission.wait_ms"], float)
    assert perm.attributes["acp.permission.options"]
    (term,) = [s for s in out if s.name.startswith("terminal ")]
    assert term.parent_id == run.span_id
    assert term.attributes["process.exit.code"] == 0
    assert term.attributes["acp.terminal.output_bytes"] > 0  # type: ignore[operator]
    fs = [s for s in out if s.name.startswith("fs/")]
    assert {s.name for s in fs} == {"fs/read_text_file", "fs/write_text_file"}
    for s in fs:
        assert s.parent_id == first.span_id
        assert str(s.attributes["file.path"]).endswith("config.json")
        assert s.attributes["file.size"] > 0  # type: ignore[operator]
        assert s.attributes["rpc.jsonrpc.request_id"]
    # content is absent by default
    assert not any(CONTENT_KEYS & s.attributes.keys() for s in out)


def test_content_only_when_asked() -> None:
    out = mapped(DEMO, content=True)
    turn = next(s for s in out if s.name.startswith("invoke_agent"))
    messages = orjson.loads(str(turn.attributes["gen_ai.input.messages"]))
    assert messages[0]["role"] == "user" and messages[0]["parts"][0]["content"]
    answer = orjson.loads(str(turn.attributes["gen_ai.output.messages"]))
    assert answer[0]["role"] == "assistant" and answer[0]["finish_reason"] == "end_turn"
    assert any("gen_ai.tool.call.arguments" in s.attributes for s in out)


def test_v2_turn_ends_at_idle_not_at_the_response() -> None:
    frames = frames_of(V2)
    prompt = next(f for f in frames if f["body"].get("method") == "session/prompt")
    response = next(
        f for f in frames if f["direction"] == "a2c" and f["body"].get("id") == prompt["body"]["id"]
    )
    idle = next(
        f
        for f in frames
        if f["body"].get("params", {}).get("update", {}).get("state") == "idle"
        and f["seq"] > response["seq"]
    )
    assert idle["t_ns"] > response["t_ns"]
    out = mapped(V2)
    turn = one(out, "invoke_agent v2-agent")
    assert turn.start_ns == START + prompt["t_ns"]
    assert turn.end_ns == START + idle["t_ns"]
    assert turn.attributes["gen_ai.response.finish_reasons"] == ["end_turn"]
    assert turn.attributes["gen_ai.response.id"] == "msg_u1"
    assert "acp.prompt_acknowledged" in [e.name for e in turn.events]
    root = one(out, "connection v2-agent")
    assert root.attributes["acp.protocol.version"] == 2
    tool = one(out, "execute_tool cargo test")
    assert tool.parent_id == turn.span_id
    term = one(out, "terminal cargo test")
    assert term.parent_id == tool.span_id
    assert term.attributes["acp.terminal.owner"] == "agent"


def test_ids_are_derived_from_the_capture() -> None:
    a, b, c = mapped(V2), mapped(V2), mapped(V2, uid="other")
    assert [(s.trace_id, s.span_id, s.parent_id) for s in a] == [
        (s.trace_id, s.span_id, s.parent_id) for s in b
    ]
    assert {s.span_id for s in a}.isdisjoint({s.span_id for s in c})


def test_without_trace_context_the_trace_id_is_ours() -> None:
    lines = [
        line.replace(b"traceparent", b"not-a-traceparent")
        for line in DEMO.read_bytes().splitlines()
    ]
    r = TraceFold()
    for frame in read_jsonl(lines):
        r.feed(frame)
    out = spans(CaptureInfo("cap", START), r)
    root = next(s for s in out if s.parent_id is None)
    assert root.trace_id.hex() != "0af7651916cd43dd8448eb211c80319c"
    assert len({s.trace_id for s in out}) == 1


# -- hostile values ----------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(1 << 70), max_value=1 << 70)
    | st.floats()
    | st.text(max_size=3000),
    lambda inner: st.lists(inner, max_size=80) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=30,
)


def _frames(values: list[Any]) -> list[Frame]:
    """A session whose every field a span reads is one of ``values`` in turn."""
    it = iter(values * 40)

    def v() -> Any:
        return next(it)

    msgs: list[tuple[Direction, dict[str, Any]]] = [
        (Direction.CLIENT_TO_AGENT, {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                      "params": {"protocolVersion": v(), "clientInfo": v()}}),
        (Direction.AGENT_TO_CLIENT, {"jsonrpc": "2.0", "id": 0,
                                      "result": {"protocolVersion": 1, "agentInfo": v()}}),
        (Direction.CLIENT_TO_AGENT, {"jsonrpc": "2.0", "id": 1, "method": "session/prompt",
                                      "params": {"sessionId": "s", "prompt": v(),
                                                 "_meta": {"traceparent": v()}}}),
        (Direction.AGENT_TO_CLIENT, {"jsonrpc": "2.0", "method": "session/update", "params": {
            "sessionId": "s", "update": {"sessionUpdate": "tool_call", "toolCallId": "t",
                                         "title": v(), "kind": v(), "status": v(),
                                         "locations": v(), "rawInput": v()}}}),
        (Direction.AGENT_TO_CLIENT, {"jsonrpc": "2.0", "method": "session/update", "params": {
            "sessionId": "s", "update": {"sessionUpdate": "usage_update", "used": v(),
                                         "size": v(), "cost": v()}}}),
        (Direction.AGENT_TO_CLIENT, {"jsonrpc": "2.0", "id": 5, "method":
                                     "session/request_permission", "params": {
                                         "sessionId": "s", "toolCall": {"toolCallId": "t"},
                                         "options": v()}}),
        (Direction.CLIENT_TO_AGENT, {"jsonrpc": "2.0", "id": 5, "result": {"outcome": v()}}),
        (Direction.AGENT_TO_CLIENT, {"jsonrpc": "2.0", "id": 6, "method": "fs/write_text_file",
                                     "params": {"sessionId": "s", "path": v(), "content": v()}}),
        (Direction.CLIENT_TO_AGENT, {"jsonrpc": "2.0", "id": 6, "error": v()}),
        (Direction.AGENT_TO_CLIENT, {"jsonrpc": "2.0", "id": 7, "method": "terminal/create",
                                     "params": {"sessionId": "s", "command": v(), "args": v()}}),
        (Direction.CLIENT_TO_AGENT, {"jsonrpc": "2.0", "id": 7, "result": {"terminalId": "x"}}),
        (Direction.AGENT_TO_CLIENT, {"jsonrpc": "2.0", "id": 1, "result": {
            "stopReason": v(), "usage": v()}}),
    ]  # fmt: skip
    out = []
    for seq, (d, body) in enumerate(msgs):
        raw = json.dumps(body).encode()  # integers beyond 64 bits too
        out.append(Frame(seq, d, seq * 1000, raw))
    return out


def _bounded(value: Any, limit: int) -> None:
    if isinstance(value, str):
        assert len(value) <= limit
    elif isinstance(value, list):
        assert len(value) <= MAX_ARRAY
        for item in value:
            assert isinstance(item, str) and len(item) <= limit
    else:
        assert isinstance(value, bool | int | float)
        if isinstance(value, int):
            assert -(1 << 63) <= value < (1 << 63)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(json_values, min_size=1, max_size=6), st.booleans())
def test_hostile_values_never_crash_and_stay_bounded(values: list[Any], content: bool) -> None:
    r = TraceFold()
    for frame in _frames(values):
        r.feed(frame)
    out = spans(CaptureInfo("cap", START), r, content=content)
    assert out
    for s in out:
        assert len(s.name) <= 96
        assert s.start_ns <= s.end_ns
        for key, value in s.attributes.items():
            _bounded(value, MAX_CONTENT if key in CONTENT_KEYS else MAX_VALUE)
        for e in s.events:
            for value in e.attributes.values():
                _bounded(value, MAX_VALUE)
    orjson.dumps(encode(out, {"service.name": "x"}, version="0"))
    # the SDK's own protobuf encoding takes every value too
    req = encode_spans(readable(out, {"service.name": "x"}, "0"))
    assert len(req.SerializeToString()) > 0


@given(json_values)
def test_attr_is_total(value: Any) -> None:
    v = attr(value)
    if v is not None:
        _bounded(v, MAX_VALUE)
        v.encode("utf-8") if isinstance(v, str) else None


def test_groups_select_exactly_their_spans() -> None:
    r = fold(DEMO)
    info = CaptureInfo("cap", START)
    every = spans(info, r)
    groups = {s.group for s in every}
    assert "end" in groups and len(groups) == 3  # two ended turns, and the rest
    for g in groups:
        part = spans(info, r, groups={g})
        assert part and {s.group for s in part} == {g}
        assert sorted(s.span_id for s in part) == sorted(s.span_id for s in every if s.group == g)


def test_live_as_it_goes_equals_afterwards() -> None:
    """Spans of each turn taken when it ends, the rest at the end: the same as mapping the
    whole capture at once."""
    info = CaptureInfo("cap", START)
    r = TraceFold()
    sent: dict[bytes, SpanData] = {}
    emitted: set[str] = set()
    with open(DEMO, "rb") as f:
        for frame in read_jsonl(f):
            r.feed(frame)
            new = {f"turn:{t.seq}" for t in r.turns if not t.open} - emitted
            if new:
                for s in spans(info, r, groups=new):
                    sent[s.span_id] = s
                emitted |= new
    for s in spans(info, r):
        if s.group not in emitted:
            sent[s.span_id] = s
    assert sorted(sent.values(), key=lambda s: s.span_id) == sorted(
        spans(info, r), key=lambda s: s.span_id
    )

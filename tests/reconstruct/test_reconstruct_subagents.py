"""Child sessions, history replays, retried prompts, proxy hops and MCP over ACP, on the
hand-written v1 and v2 fixtures (docs/protocol.md §13): what each view rebuilds, and that
``check`` finds nothing wrong in them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.paths import DATA

from acp_proxy.check.core.checker import check_frames
from acp_proxy.export.jsonl import read_jsonl
from acp_proxy.protocol.frames import Frame
from acp_proxy.reconstruct import reconstruct
from acp_proxy.reconstruct.views import reconstruction_json

FIXTURES = DATA / "reconstruct"


def _frames(name: str) -> list[Frame]:
    with open(FIXTURES / name, "rb") as f:
        return list(read_jsonl(f))


def _view(name: str) -> dict[str, Any]:
    return reconstruction_json(reconstruct(_frames(name)))


def _findings(name: str, **options: Any) -> set[tuple[str, str]]:
    return {(f.rule, f.severity) for f in check_frames(((f, ()) for f in _frames(name)), **options)}


def test_v1_child_session_under_its_parent_with_its_messages_and_tool_link() -> None:
    r = _view("v1-subagents.jsonl")
    sessions = {s["sessionId"]: s for s in r["sessions"]}
    assert [s["sessionId"] for s in r["sessions"]] == ["parent", "child"]
    assert sessions["parent"]["children"] == ["child"]
    child = sessions["child"]
    assert child["parentSessionId"] == "parent"
    assert child["subagent"]["title"] == "reviewer"
    assert "description" not in child["subagent"]  # patched away by a null
    tools = {t["toolCallId"]: t for t in r["toolCalls"]}
    assert tools["t1"]["sessionIds"] == ["child"] and tools["t1"]["sessionId"] == "parent"
    assert tools["t2"]["sessionId"] == "child"
    assert child["subagent"]["toolCallIds"] == ["t1"]
    said = {m["messageId"]: m for m in r["sessionMessages"]}
    assert said["out2"]["text"] == "two bugs: line 3, line 9"
    assert (said["out2"]["senderSessionId"], said["out2"]["recipientSessionId"]) == (
        "child",
        "parent",
    )


def test_v1_load_history_is_history_not_turn_output() -> None:
    r = _view("v1-subagents.jsonl")
    (turn,) = r["turns"]
    assert turn["agentText"] == "The reviewer found two bugs."  # said once, not twice
    parent = next(s for s in r["sessions"] if s["sessionId"] == "parent")
    assert parent["history"] == 3
    (replay,) = parent["replays"]
    assert replay["complete"] and not replay["truncated"]
    assert _findings("v1-subagents.jsonl") <= {("schema.newer", "info")}


def test_v2_retry_is_one_turn_and_the_replay_is_marked_with_its_child() -> None:
    r = _view("v2-subagents.jsonl")
    (turn,) = r["turns"]
    assert turn["idempotencyKey"] == "submit-1" and turn["messageId"] == "u1"
    assert [(x["seq"], x["messageId"]) for x in turn["retries"]] == [(5, "u1")]
    assert turn["agentText"] == "Tests pass." and turn["stopReason"] == "end_turn"
    parent = next(s for s in r["sessions"] if s["sessionId"] == "parent")
    (replay,) = parent["replays"]
    assert replay["children"] == ["child"] and replay["complete"]
    child = next(s for s in r["sessions"] if s["sessionId"] == "child")
    assert child["history"] == 2  # its replayed message and its own marker
    assert _findings("v2-subagents.jsonl") == set()


def test_a_replay_cut_short_is_truncated() -> None:
    frames = _frames("v2-subagents.jsonl")
    cut = next(f.seq for f in frames if b'"replay_complete"' in f.raw)  # the child's marker
    r = reconstruction_json(reconstruct(frames, at=cut))
    parent = next(s for s in r["sessions"] if s["sessionId"] == "parent")
    assert parent["replays"][0]["truncated"] and not parent["replays"][0]["complete"]
    found = {f.rule for f in check_frames((f, ()) for f in frames if f.seq <= cut)}
    assert "v2.replay-truncated" in found


def test_a_proxy_hop_negotiates_with_proxy_initialize_and_folds_its_own_side() -> None:
    r = _view("v1-proxy-hop.jsonl")
    assert r["protocolVersion"] == 1
    (turn,) = r["turns"]
    assert turn["agentText"] == "hi there"  # the forwarded update, not the envelope too
    assert {
        rule for rule, severity in _findings("v1-proxy-hop.jsonl") if severity != "warning"
    } == set()
    assert _findings("v1-proxy-hop.jsonl", unstable=True) == set()


def test_mcp_over_acp_calls_of_every_generation() -> None:
    r = _view("v1-mcp-over-acp.jsonl")
    calls = [(c["server"], c["method"], c["tool"], c["result"], c["error"]) for c in r["mcpCalls"]]
    assert calls == [
        (
            "ide-1",
            "tools/call",
            "open_file",
            {"content": [{"type": "text", "text": "opened"}]},
            None,
        ),
        ("ide-1", "tools/call", "missing", None, {"code": -32602, "message": "unknown tool"}),
        ("acp:ide-2", "connect", None, {"connection_id": "conn-9"}, None),
        ("acp:ide-2", "tools/list", None, {"tools": [{"name": "grep"}]}, None),
        ("acp:ide-2", "disconnect", None, None, None),
    ]
    assert r["mcpCalls"][0]["arguments"] == {"path": "/home/u/proj/a.py"}
    assert r["mcpCalls"][0]["notifications"] == 1
    assert _findings("v1-mcp-over-acp.jsonl", unstable=True) == set()


def test_fixtures_are_in_place() -> None:
    for name in ("v1-subagents", "v2-subagents", "v1-proxy-hop", "v1-mcp-over-acp"):
        assert Path(FIXTURES / f"{name}.jsonl").is_file()
        assert Path(FIXTURES / "expected" / f"{name}.json").is_file()


def test_the_sessions_text_puts_every_line_of_a_child_under_it() -> None:
    from acp_proxy.text.views import sessions_lines

    lines = list(sessions_lines(reconstruct(_frames("v2-subagents.jsonl"))))
    child = lines.index("  └ child child  cwd ?")
    assert lines[child + 1 :] == [
        '      subagent of parent: {"title":"test runner","capabilities":{"cancel":{}},'
        '"state":{"state":…',
        "      message parent → child: run cargo test",
        "      state   idle",
    ]
    assert lines[child - 1] == "    state   idle"  # the parent's, at the parent's depth

"""Permissions, plans, modes, config, usage and turns (v1 and v2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.paths import DATA, RECORDINGS

from acp_proxy.export.jsonl import read_jsonl
from acp_proxy.reconstruct import reconstruct
from acp_proxy.reconstruct.session import intervals_ns
from acp_proxy.reconstruct.views import permissions_json, sessions_json, turns_json

DATA = DATA / "reconstruct"
RECORDINGS = RECORDINGS


def _load(path: Path) -> Any:
    with open(path, "rb") as f:
        return reconstruct(read_jsonl(f))


def test_v1_permission_outcome_and_wait() -> None:
    [p] = permissions_json(_load(RECORDINGS / "demo-v1.jsonl"))
    assert p["toolCallId"] == "call_test" and p["title"] == "Run the tests"
    assert (p["outcome"], p["optionId"], p["optionKind"], p["approved"]) == (
        "selected",
        "allow",
        "allow_once",
        True,
    )
    assert p["waitMs"] > 0 and p["answeredSeq"] == p["seq"] + 1


def test_v1_permission_cancelled_by_the_agent() -> None:
    [p] = permissions_json(_load(DATA / "v1-edges.jsonl"))
    assert p["error"]["code"] == -32800 and p["approved"] is False
    assert p["cancelRequestedSeq"] is not None and p["title"] == "rm -rf build"


def test_v2_permissions_subjects_custom_kinds_and_unknown_outcome() -> None:
    perms = permissions_json(_load(DATA / "v2-tool-calls.jsonl"))
    deploy, command, other = perms
    assert deploy["title"] == "Deploy?" and deploy["toolCallId"] == "call_d"
    assert deploy["outcome"] == "_acme.snoozed" and deploy["approved"] is False
    assert deploy["waitMs"] == 251.0
    assert command["subject"]["type"] == "command" and command["toolCallId"] == "call_a"
    assert command["optionKind"] == "_defer" and command["approved"] is False
    assert {"optionId": "_ask_later", "name": "Later", "kind": "_defer"} in command["options"]
    assert other["subject"] == {"type": "_acme.thing", "x": 1} and other["approved"] is True


def test_v1_turns_end_with_the_prompt_response() -> None:
    first, second = turns_json(_load(RECORDINGS / "demo-v1.jsonl"))
    assert first["stopReason"] == "end_turn" and first["cancelled"] is False
    assert first["toolCallIds"] == ["call_read", "call_edit", "call_test"]
    assert 0 < first["timeToFirstOutputMs"] < first["durationMs"]
    assert 0 < first["toolTimeMs"] <= first["durationMs"]
    assert first["permissionWaitMs"] > 0
    assert first["agentText"].startswith("Debug mode is on")
    assert second["stopReason"] == "cancelled" and second["cancelled"] is True
    assert second["cancelSeq"] is not None and second["cancelToStopMs"] >= 0


def test_v2_turns_end_with_idle_not_with_the_prompt_response() -> None:
    with open(DATA / "v2-tool-calls.jsonl", "rb") as f:
        frames = list(read_jsonl(f))
    ack = next(fr.seq for fr in frames if b'"messageId":"msg_u2"' in fr.raw)
    [turn] = turns_json(reconstruct(frames, at=ack))
    assert turn["messageId"] == "msg_u2" and turn["endedSeq"] is None
    first, second = turns_json(reconstruct(frames))
    assert first["stopReason"] == "end_turn" and first["permissionWaitMs"] == 301.0
    assert second["stopReason"] == "cancelled" and second["cancelToStopMs"] == 2.0
    assert second["toolCallIds"] == ["call_e"]


def test_v2_plans_config_usage_state_and_unknown_updates() -> None:
    [s] = sessions_json(_load(DATA / "v2-tool-calls.jsonl"))
    assert list(s["plans"]) == ["p1"] and s["plans"]["p1"]["entries"][0]["status"] == "completed"
    assert [h["value"].get("planId", h["value"].get("removed")) for h in s["planHistory"]] == [
        "p1",
        "p2",
        "p1",
        "p2",
    ]
    assert s["configOptions"][0]["currentValue"] == "ask"
    assert [h["source"] for h in s["configHistory"]] == ["agent", "client"]
    assert s["usage"] == {"used": 100, "size": 1000}
    assert s["state"] == "idle"
    assert s["unknownUpdates"] == {"_acme.heartbeat": 1}


def test_v1_plan_replaces_and_modes_change() -> None:
    [s] = sessions_json(_load(RECORDINGS / "demo-v1.jsonl"))
    assert len(s["planHistory"]) == 2 and s["plan"][0]["status"] == "completed"
    [s] = sessions_json(_load(DATA / "v1-edges.jsonl"))
    assert [(h["value"], h["source"]) for h in s["modeHistory"]] == [
        ("ask", "agent"),
        ("code", "client"),
        ("ask", "agent"),
    ]


def test_protocol_version_comes_from_initialize() -> None:
    assert _load(RECORDINGS / "demo-v1.jsonl").protocol_version == 1
    assert _load(DATA / "v2-terminals.jsonl").protocol_version == 2
    with open(DATA / "v2-terminals.jsonl", "rb") as f:
        assert reconstruct(read_jsonl(f), at=0).protocol_version == 2  # the request alone


def test_intervals_do_not_count_overlaps_twice() -> None:
    assert intervals_ns([(0, 10), (5, 15), (20, 30)]) == 25
    assert intervals_ns([]) == 0


def test_v2_resume_replay_is_marked_and_message_upserts_replace_chunks() -> None:
    r = _load(DATA / "v2-replay.jsonl")
    assert r.tool_calls[("sess_1", "old_call")].replayed is True
    assert r.terminals[("sess_1", "old_term")].replayed is True
    assert r.tool_calls[("sess_1", "new_call")].replayed is False
    [turn] = turns_json(r)  # the replayed idle is not a turn of this capture
    assert turn["prompt"] == "and now?" and turn["stopReason"] == "end_turn"
    assert turn["agentText"] == "Final answer. Bye."
    assert turn["thoughtText"] == ""  # set, then cleared with null
    assert turn["toolCallIds"] == ["new_call"]


def test_a_message_id_of_any_json_type_is_folded_not_a_crash() -> None:
    # peer content is hostile (docs/design.md principle 7): a list or an object for an id
    from acp_proxy.protocol.frames import Direction, Frame

    def update(seq: int, u: dict[str, Any]) -> Frame:
        body = {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": "s", "update": u},
        }
        return Frame(seq, Direction.AGENT_TO_CLIENT, seq, json.dumps(body).encode())

    prompt = {"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {"sessionId": "s"}}
    frames = [Frame(0, Direction.CLIENT_TO_AGENT, 0, json.dumps(prompt).encode())]
    text = {"type": "text", "text": "a"}
    for i, mid in enumerate([["x"], {"k": 1}, ["x"], 7], start=1):
        frames.append(update(2 * i - 1, {"sessionUpdate": "agent_message", "messageId": mid,
                                         "content": [text]}))  # fmt: skip
        frames.append(update(2 * i, {"sessionUpdate": "agent_message_chunk", "messageId": mid,
                                     "content": text}))  # fmt: skip
    [turn] = turns_json(reconstruct(frames))
    assert turn["agentText"] == "aa" * 3  # ["x"] again is the first message, replaced

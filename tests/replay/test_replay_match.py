"""The pure replay logic: matching, ordering, answers, mapping (no processes, no sockets)."""

from __future__ import annotations

import json
from typing import Any

from acp_proxy.protocol.frames import Direction, Frame
from acp_proxy.replay.core.agent import AgentStandIn, MatchMode
from acp_proxy.replay.core.canonical import canonical, differences
from acp_proxy.replay.core.client import ClientStandIn
from acp_proxy.replay.core.compare import compare, parse_ignore, summarise_run
from acp_proxy.replay.core.mapper import Mapper
from acp_proxy.replay.core.match import parse_messages

C, A = "c2a", "a2c"


def recording(*items: tuple[str, dict[str, Any]]) -> list[Any]:
    frames = [
        Frame(i, Direction(d), i * 1000, json.dumps(v, separators=(",", ":")).encode())
        for i, (d, v) in enumerate(items)
    ]
    return parse_messages(frames)


def req(i: Any, method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "method": method, "params": params}


def note(method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def ok(i: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "result": result}


def send(stand_in: AgentStandIn, value: dict[str, Any]) -> list[Any]:
    return [json.loads(e.data) for e in stand_in.receive(json.dumps(value).encode())]


TWO_INDEPENDENT = recording(
    (C, req(0, "initialize", protocolVersion=1)),
    (A, ok(0, {"protocolVersion": 1})),
    (C, req(1, "_x/stats", what="a")),
    (A, ok(1, {"n": "a"})),
    (C, req(2, "_x/stats", what="b")),
    (A, ok(2, {"n": "b"})),
)


def test_lenient_independent_requests_in_another_order() -> None:
    s = AgentStandIn(TWO_INDEPENDENT)
    assert send(s, req(10, "initialize", protocolVersion=1)) == [ok(10, {"protocolVersion": 1})]
    assert send(s, req(11, "_x/stats", what="b")) == [ok(11, {"n": "b"})]
    assert send(s, req(12, "_x/stats", what="a")) == [ok(12, {"n": "a"})]
    s.finish()
    assert s.clean and s.done


def test_strict_wants_the_recorded_order() -> None:
    s = AgentStandIn(TWO_INDEPENDENT, MatchMode.STRICT)
    send(s, req(0, "initialize", protocolVersion=1))
    (error,) = send(s, req(1, "_x/stats", what="b"))
    assert error["id"] == 1
    assert "expected #2 request _x/stats [1] next (strict order)" in error["error"]["message"]
    assert not s.clean


def test_repeated_identical_requests_take_the_recorded_answers_in_order() -> None:
    rec = recording(
        (C, req(0, "_x/poll")),
        (A, ok(0, {"left": 2})),
        (C, req(1, "_x/poll")),
        (A, ok(1, {"left": 1})),
    )
    s = AgentStandIn(rec)
    assert send(s, req("a", "_x/poll"))[0]["result"] == {"left": 2}
    assert send(s, req("b", "_x/poll"))[0]["result"] == {"left": 1}
    (third,) = send(s, req("c", "_x/poll"))
    assert third["id"] == "c" and third["error"]["code"] == -32602
    assert "all 2 recorded answers to this request were already used" in third["error"]["message"]


def test_volatile_fields_do_not_count() -> None:
    rec = recording(
        (C, req(0, "session/new", cwd="/old/ws", mcpServers=[], _meta={"trace": 1})),
        (A, ok(0, {"sessionId": "s1"})),
        (C, req(1, "_x/at", sessionId="s1", when="2026-01-01T10:00:00Z", file="/old/ws/a.py")),
        (A, ok(1, {"path": "/old/ws/a.py", "sessionId": "s1"})),
    )
    s = AgentStandIn(rec)
    assert send(s, req(5, "session/new", cwd="/new/ws", mcpServers=[]))[0]["result"] == {
        "sessionId": "s1"
    }
    (answer,) = send(
        s, req(6, "_x/at", sessionId="s1", when="2026-12-02T15:00:00.5+01:00", file="/new/ws/a.py")
    )
    assert answer == ok(6, {"path": "/new/ws/a.py", "sessionId": "s1"})


def test_client_chosen_session_ids_are_mapped_consistently() -> None:
    rec = recording(
        (C, req(0, "session/load", sessionId="old", cwd="/w", mcpServers=[])),
        (A, note("session/update", sessionId="old", update={"sessionUpdate": "plan"})),
        (A, ok(0, {})),
        (C, req(1, "session/prompt", sessionId="old", prompt=[])),
        (A, ok(1, {"stopReason": "end_turn", "sessionId": "old"})),
    )
    s = AgentStandIn(rec)
    out = send(s, req(0, "session/load", sessionId="mine", cwd="/w", mcpServers=[]))
    assert out[0]["params"]["sessionId"] == "mine" and out[1] == ok(0, {})
    assert send(s, req(1, "session/prompt", sessionId="mine", prompt=[]))[0]["result"] == {
        "stopReason": "end_turn",
        "sessionId": "mine",
    }
    (error,) = send(s, req(2, "session/prompt", sessionId="other", prompt=[]))
    assert "error" in error


PERMISSION = recording(
    (C, req(0, "session/prompt", sessionId="s", prompt=[{"type": "text", "text": "go"}])),
    (A, req(0, "session/request_permission", sessionId="s", options=[])),
    (C, ok(0, {"outcome": {"outcome": "selected", "optionId": "allow"}})),
    (A, note("session/update", sessionId="s", update={"sessionUpdate": "tool_call_update"})),
    (A, ok(0, {"stopReason": "end_turn"})),
)


def test_agent_requests_wait_for_the_clients_answer() -> None:
    s = AgentStandIn(PERMISSION)
    (ask,) = send(
        s, req(7, "session/prompt", sessionId="s", prompt=[{"type": "text", "text": "go"}])
    )
    assert ask["method"] == "session/request_permission" and ask["id"] == 0  # recorded id
    rest = send(s, ok(0, {"outcome": {"outcome": "selected", "optionId": "allow"}}))
    assert [m.get("method") for m in rest] == ["session/update", None]
    assert rest[1] == ok(7, {"stopReason": "end_turn"})
    s.finish()
    assert s.clean


def test_a_client_that_answers_permission_differently_is_told() -> None:
    s = AgentStandIn(PERMISSION)
    send(s, req(7, "session/prompt", sessionId="s", prompt=[{"type": "text", "text": "go"}]))
    rest = send(s, ok(0, {"outcome": {"outcome": "selected", "optionId": "reject"}}))
    assert len(rest) == 2  # the recording goes on as recorded
    (problem,) = s.problems
    assert problem.kind == "different_answer"
    assert 'result.outcome.optionId: recorded "allow", got "reject"' in problem.message
    assert not s.clean


def test_notifications_wait_for_the_cancel_they_followed() -> None:
    rec = recording(
        (C, req(4, "session/prompt", sessionId="s", prompt=[])),
        (A, note("session/update", sessionId="s", update={"sessionUpdate": "agent_message_chunk"})),
        (C, note("session/cancel", sessionId="s")),
        (A, ok(4, {"stopReason": "cancelled"})),
    )
    s = AgentStandIn(rec)
    assert len(send(s, req(1, "session/prompt", sessionId="s", prompt=[]))) == 1
    assert send(s, note("session/cancel", sessionId="s")) == [ok(1, {"stopReason": "cancelled"})]


def test_an_unrecorded_notification_is_reported_not_answered() -> None:
    s = AgentStandIn(PERMISSION)
    assert send(s, note("$/cancel_request", requestId=3)) == []
    assert s.problems[0].kind == "unexpected_message"


def test_canonical_and_differences() -> None:
    value = {"a": 1, "_meta": {"x": 1}, "at": "2026-01-02T03:04:05.123Z", "sessionId": "z"}
    assert canonical(value, known_session=lambda _s: False) == {
        "a": 1,
        "at": "<time>",
        "sessionId": "<session>",
    }
    assert canonical({"t": {"toolCallId": "r"}}, wildcards=frozenset({"toolCallId"})) == {
        "t": {"toolCallId": "<id>"}
    }
    diffs = differences({"p": [{"x": 1}], "q": 2}, {"p": [{"x": 3}]})
    assert [str(d) for d in diffs] == ["p[0].x: recorded 1, got 3", "q: recorded 2, got nothing"]


def test_mapper_rewrites_paths_on_a_boundary_only() -> None:
    m = Mapper([("/tmp/ws", "/home/me/ws")])
    assert m.to_live({"uri": "file:///tmp/ws/a", "other": "/tmp/ws2/b"}) == {
        "uri": "file:///home/me/ws/a",
        "other": "/tmp/ws2/b",
    }
    assert m.to_recorded("/home/me/ws") == "/tmp/ws"


def test_client_stand_in_sends_cancel_after_the_same_update() -> None:
    rec = recording(
        (C, req(0, "session/prompt", sessionId="s", prompt=[])),
        (A, note("session/update", sessionId="s", update={"sessionUpdate": "agent_message_chunk"})),
        (A, note("session/update", sessionId="s", update={"sessionUpdate": "agent_message_chunk"})),
        (C, note("session/cancel", sessionId="s")),
        (A, ok(0, {"stopReason": "cancelled"})),
    )
    c = ClientStandIn(rec)
    prompt, cancel = c.steps
    assert c.ready(prompt) is True
    c.send(prompt)
    chunk = note("session/update", sessionId="s", update={"sessionUpdate": "agent_message_chunk"})
    c.receive(json.dumps(chunk).encode())
    assert c.ready(cancel) is False
    c.receive(json.dumps(chunk).encode())
    assert c.ready(cancel) is True
    assert cancel.wait is not None and "2nd agent_message_chunk" in cancel.wait.describe()


def test_client_stand_in_gives_up_when_the_turn_ended_first() -> None:
    rec = recording(
        (C, req(0, "session/prompt", sessionId="s", prompt=[])),
        (A, note("session/update", sessionId="s", update={"sessionUpdate": "plan"})),
        (C, note("session/cancel", sessionId="s")),
        (A, ok(0, {"stopReason": "cancelled"})),
    )
    c = ClientStandIn(rec)
    prompt, cancel = c.steps
    c.send(prompt)
    c.receive(json.dumps(ok(0, {"stopReason": "end_turn"})).encode())
    assert c.ready(cancel) is None


def test_client_stand_in_answers_with_the_live_id_and_new_session() -> None:
    rec = recording(
        (C, req(0, "session/new", cwd="/w", mcpServers=[])),
        (A, ok(0, {"sessionId": "old"})),
        (C, req(1, "session/prompt", sessionId="old", prompt=[])),
        (A, req(9, "fs/read_text_file", sessionId="old", path="/w/a", toolCallId="t1")),
        (C, ok(9, {"content": "hi"})),
        (A, ok(1, {"stopReason": "end_turn"})),
    )
    c = ClientStandIn(rec)
    new, prompt = c.steps
    c.send(new)
    c.receive(json.dumps(ok(0, {"sessionId": "fresh"})).encode())
    assert json.loads(c.send(prompt))["params"]["sessionId"] == "fresh"
    ask = req(44, "fs/read_text_file", sessionId="fresh", path="/w/a", toolCallId="random")
    (answer,) = c.receive(json.dumps(ask).encode())
    assert json.loads(answer) == ok(44, {"content": "hi"})
    (error,) = c.receive(
        json.dumps(req(45, "fs/read_text_file", sessionId="fresh", path="/w/b")).encode()
    )
    assert "no answer for" in json.loads(error)["error"]["message"]


def test_compare_reports_stop_reason_statuses_and_files() -> None:
    def run(status: str, stop: str, content: str) -> Any:
        return summarise_run(
            recording(
                (C, req(0, "session/prompt", sessionId="s", prompt=[])),
                (
                    A,
                    note(
                        "session/update",
                        sessionId="s",
                        update={"sessionUpdate": "tool_call", "toolCallId": "x", "title": "T"},
                    ),
                ),
                (
                    A,
                    note(
                        "session/update",
                        sessionId="s",
                        update={
                            "sessionUpdate": "tool_call_update",
                            "toolCallId": "x",
                            "status": status,
                        },
                    ),
                ),
                (A, req(1, "fs/write_text_file", sessionId="s", path="/f", content=content)),
                (C, ok(1, {})),
                (A, ok(0, {"stopReason": stop})),
            )
        )

    same = compare(run("completed", "end_turn", "a"), run("completed", "end_turn", "a"))
    assert same == []
    found = [
        str(d) for d in compare(run("completed", "end_turn", "a"), run("failed", "refusal", "b"))
    ]
    assert found == [
        "turn 1 (session 1) · stop reason: recorded end_turn; replayed refusal",
        "turn 1 (session 1) · tool call 1 'T' statuses: recorded pending → completed; "
        "replayed pending → failed",
        "files · written /f: recorded a; replayed b",
    ]
    masked = parse_ignore(["params.content"])
    assert summarise_run(recording((A, req(1, "fs/write_text_file", path="/f", content="z"))),
                         ignore=masked).files == {"/f": "None"}  # fmt: skip


def test_a_clients_cancel_request_names_its_own_live_id() -> None:
    rec = recording(
        (C, req(3, "_x/slow")),
        (C, note("$/cancel_request", requestId=3)),
        (A, {"jsonrpc": "2.0", "id": 3, "error": {"code": -32800, "message": "cancelled"}}),
    )
    s = AgentStandIn(rec)
    assert send(s, req("live-9", "_x/slow")) == []
    (answer,) = send(s, note("$/cancel_request", requestId="live-9"))
    assert answer["id"] == "live-9" and answer["error"]["code"] == -32800
    assert s.clean


def test_one_session_of_several_can_be_chosen() -> None:
    from acp_proxy.replay.serve import select_session

    rec = recording(
        (C, req(0, "initialize", protocolVersion=1)),
        (A, ok(0, {"protocolVersion": 1})),
        (C, req(1, "session/new", cwd="/a", mcpServers=[])),
        (A, ok(1, {"sessionId": "one"})),
        (C, req(2, "session/new", cwd="/b", mcpServers=[])),
        (A, ok(2, {"sessionId": "two"})),
        (C, req(3, "session/prompt", sessionId="two", prompt=[])),
        (A, note("session/update", sessionId="two", update={"sessionUpdate": "plan"})),
        (A, ok(3, {"stopReason": "end_turn"})),
        (C, req(4, "session/prompt", sessionId="one", prompt=[])),
        (A, ok(4, {"stopReason": "refusal"})),
    )
    assert [m.seq for m in select_session(rec, "two")] == [0, 1, 4, 5, 6, 7, 8]
    s = AgentStandIn(select_session(rec, "one"))
    send(s, req(0, "initialize", protocolVersion=1))
    assert (
        send(s, req(1, "session/new", cwd="/w", mcpServers=[]))[0]["result"]["sessionId"] == "one"
    )
    assert send(s, req(2, "session/prompt", sessionId="one", prompt=[]))[0]["result"] == {
        "stopReason": "refusal"
    }


def test_a_request_the_recording_never_answered_is_noted() -> None:
    s = AgentStandIn(recording((C, req(0, "_x/hang"))))
    assert send(s, req(9, "_x/hang")) == []
    assert s.problems[0].note and "never answered in the recording" in s.problems[0].message
    assert s.clean

"""The recorded client's end, played as it was (pure): what the agent said after the
client's last message is waited for, the client's own signal is sent when it sent one, and
what an agent announces on its own time is compared by kind, not by place."""

from __future__ import annotations

import json
from typing import Any

from acp_proxy.protocol.frames import Direction, Frame
from acp_proxy.replay.core.client import ClientStandIn
from acp_proxy.replay.core.compare import compare, summarise_run
from acp_proxy.replay.core.ending import client_ending, client_eof_ns
from acp_proxy.replay.core.match import parse_messages

C2A, A2C = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT


def run(*steps: tuple[Direction, dict[str, Any]]) -> list[Any]:
    frames = [Frame(i, d, i * 1000, json.dumps(v).encode(), True) for i, (d, v) in enumerate(steps)]
    return parse_messages(frames)


def update(kind: str, **extra: Any) -> dict[str, Any]:
    u = {"sessionUpdate": kind, **extra}
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": u}}


PROMPT = {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {"sessionId": "s"}}
CANCEL = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}}
ANSWER = {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "cancelled"}}


def test_the_replay_waits_for_what_followed_the_last_client_message() -> None:
    """A v2 turn ends with an idle state_update after the prompt's answer: the client's
    stdin must not close before it came, as it did not in the recording."""
    recorded = run(
        (C2A, PROMPT),
        (A2C, update("agent_message_chunk")),
        (C2A, CANCEL),
        (A2C, ANSWER),
        (A2C, update("state_update", state="idle", stopReason="cancelled")),
    )
    stand_in = ClientStandIn(recorded)
    stand_in.send(stand_in.steps[0])
    stand_in.receive(json.dumps(update("agent_message_chunk")).encode())
    stand_in.send(stand_in.steps[1])
    assert stand_in.tail_ready() is False
    stand_in.receive(json.dumps(ANSWER).encode())
    assert stand_in.outstanding == 0 and stand_in.tail_ready() is False  # not yet: idle
    stand_in.receive(json.dumps(update("state_update", state="idle")).encode())
    assert stand_in.tail_ready() is True


def test_what_came_after_the_client_closed_stdin_is_not_waited_for() -> None:
    recorded = run((C2A, PROMPT), (A2C, ANSWER), (A2C, update("usage_update")))
    eof = recorded[1].t_ns  # the client closed stdin right after the answer
    stand_in = ClientStandIn(recorded, client_eof_ns=eof)
    stand_in.send(stand_in.steps[0])
    stand_in.receive(json.dumps(ANSWER).encode())
    assert stand_in.tail_ready() is True


def test_the_clients_signal_and_when_it_came() -> None:
    events = [
        {"t_ns": 10, "kind": "spawn", "detail": "{}"},
        {"t_ns": 2_000_000_000, "kind": "client_eof", "detail": None},
        {"t_ns": 2_100_000_000, "kind": "signal", "detail": '{"signal":"SIGTERM"}'},
        {"t_ns": 2_300_000_000, "kind": "exit", "detail": '{"exit_code":143}'},
    ]
    assert client_eof_ns(events) == 2_000_000_000
    (after, name) = client_ending(events) or (None, None)
    assert name == "SIGTERM" and after is not None and abs(after - 0.1) < 1e-9
    assert client_ending([e for e in events if e["kind"] != "signal"]) is None


def test_ambient_updates_are_compared_by_kind_not_place() -> None:
    recorded = run(
        (A2C, update("available_commands_update")),
        (C2A, PROMPT),
        (A2C, update("agent_message_chunk")),
        (A2C, ANSWER),
    )
    later = run(
        (C2A, PROMPT),
        (A2C, update("available_commands_update")),
        (A2C, update("agent_message_chunk")),
        (A2C, update("current_mode_update")),  # more than recorded: not a divergence
        (A2C, ANSWER),
    )
    assert compare(summarise_run(recorded), summarise_run(later)) == []
    never = run((C2A, PROMPT), (A2C, update("agent_message_chunk")), (A2C, ANSWER))
    (d,) = compare(summarise_run(recorded), summarise_run(never))
    assert (d.where, d.what, d.recorded, d.replayed) == (
        "run",
        "announced",
        ["available_commands_update"],
        [],
    )


def test_what_was_announced_after_the_client_left_is_not_required() -> None:
    """An extension's status the agent sent after the client closed its stdin raced the
    client's kill: another run that did not get to say it has not diverged."""
    recorded = run(
        (C2A, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}),
        (A2C, {"jsonrpc": "2.0", "id": 0, "result": {}}),
        (A2C, {"jsonrpc": "2.0", "method": "_auth/status_update", "params": {}}),
    )
    eof = recorded[1].t_ns  # the client left right after the answer
    replayed = run(
        (C2A, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}),
        (A2C, {"jsonrpc": "2.0", "id": 0, "result": {}}),
    )
    assert compare(summarise_run(recorded, client_eof_ns=eof), summarise_run(replayed)) == []
    (d,) = compare(summarise_run(recorded), summarise_run(replayed))
    assert d.what == "announced"

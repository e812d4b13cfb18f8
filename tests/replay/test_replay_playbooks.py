"""The two stand-ins of ``replay`` as playbooks: live messages in, what goes out next.

``AgentStandIn`` is fed what a live client sends (``Client``) and gives the recorded agent
messages that become due; ``ClientStandIn`` is asked for its next step (``Next``) and fed
what a live agent sends (``Agent``), as ``replay/run.py`` drives it. A message that goes
out as the very bytes recorded is ``Replays(seq)``; one rewritten (a live id, a live
session) is ``Sends(value)``; a problem either reports is ``Problem(kind, seq)``
(``standins.py``).
"""

from __future__ import annotations

from typing import Any

from standins import (
    A,
    Agent,
    C,
    Client,
    Finish,
    Next,
    Problem,
    Replays,
    Sends,
    Start,
    Waits,
    agent,
    chunk,
    client,
    note,
    ok,
    req,
)
from support.playbook import Like

from acp_proxy.replay.core.agent import MatchMode

INIT = req(0, "initialize", protocolVersion=1)
INIT_OK = ok(0, {"protocolVersion": 1, "agentCapabilities": {}})
NEW = req(1, "session/new", cwd="/rec/ws", mcpServers=[])
NEW_OK = ok(1, {"sessionId": "s1"})
PROMPT = req(2, "session/prompt", sessionId="s1", prompt=[{"type": "text", "text": "go"}])
READ = req(0, "fs/read_text_file", sessionId="s1", path="/rec/ws/a.py")
READ_OK = ok(0, {"content": "x = 1\n"})
END = ok(2, {"stopReason": "end_turn"})

SESSION = (
    (C, INIT),
    (A, INIT_OK),
    (C, NEW),
    (A, NEW_OK),
    (C, PROMPT),
    (A, chunk("reading")),
    (A, READ),
    (C, READ_OK),
    (A, chunk("done")),
    (A, END),
)


# -- the agent stand-in --------------------------------------------------------------------


def test_the_recorded_agent_answers_a_client_that_says_what_was_recorded() -> None:
    assert (
        agent(*SESSION)
        >> Start()
        >> Client(INIT)
        << Replays(1)  # same id, same bytes: the recorded bytes go out
        >> Client(req(1, "session/new", cwd="/live/ws", mcpServers=[]))
        << Replays(3)  # another workspace is the same session/new
        >> Client({**PROMPT, "id": 77})
        << Replays(5)
        << Sends(req(0, "fs/read_text_file", sessionId="s1", path="/live/ws/a.py"))  # its id
        >> Client(ok(0, {"content": "x = 1\n"}))
        << Replays(8)
        << Sends(ok(77, {"stopReason": "end_turn"}))  # answered with the live id
        >> Finish()
    )


def test_what_the_agent_asked_waits_for_the_clients_answer_and_a_different_one_is_told() -> None:
    assert (
        agent(*SESSION)
        >> Client(INIT)
        << Replays(1)
        >> Client(NEW)
        << Replays(3)
        >> Client(PROMPT)
        << Replays(5)
        << Replays(6)
        >> Client(chunk("what the client may say meanwhile"))  # nothing recorded: reported
        << Problem("unexpected_message")
        >> Client(ok(0, {"content": "x = 2\n"}))
        << Replays(8)
        << Replays(9)
        << Problem("different_answer", 7)  # and the replay goes on as recorded
    )


def error(i: Any, code: int, says: str) -> Like:
    """A JSON-RPC error for the live request ``i`` whose message contains ``says``."""

    def test(out: Any) -> bool:
        e = out.value.get("error") if isinstance(out, Sends) else None
        return out.value["id"] == i and e["code"] == code and says in e["message"] if e else False

    return Like(f"error {code} to [{i}] saying {says!r}", test)


def test_a_request_with_no_recorded_answer_gets_an_error_naming_the_closest() -> None:
    assert (
        agent(*SESSION)
        >> Client(INIT)
        << Replays(1)
        >> Client(req(5, "_x/unknown"))  # a method never recorded
        << error(5, -32601, "no recorded answer for _x/unknown; closest recorded request is #0")
        << Problem("unmatched_request")
        >> Client(req(6, "session/new", cwd="/w", mcpServers=[{"x": 1}]))  # other params
        << error(6, -32602, "closest recorded request is #2 request session/new [1]")
        << Problem("unmatched_request")
        >> Client(INIT)  # answered already: one initialize per connection
        << error(0, -32602, "all 1 recorded answers to this request were already used")
        << Problem("unmatched_request")
        >> Finish()
        << Problem("not_received", 2)
        << Problem("not_sent", 3)
    )


def test_strict_mode_wants_the_recorded_order() -> None:
    two = ((C, req(1, "_x/a")), (A, ok(1, "a")), (C, req(2, "_x/b")), (A, ok(2, "b")))
    assert (
        agent(*two, mode=MatchMode.STRICT)
        >> Client(req(2, "_x/b"))
        << error(
            2,
            -32602,
            "closest recorded request is #0 request _x/a [1]: expected #0 "
            "request _x/a [1] next (strict order)",
        )
        << Problem("unmatched_request")
        >> Client(req(1, "_x/a"))
        << Replays(1)
        >> Client(req(2, "_x/b"))
        << Replays(3)
    )
    assert (  # lenient: independent requests in any order
        agent(*two) >> Client(req(2, "_x/b")) << Replays(3) >> Client(req(1, "_x/a")) << Replays(1)
    )


def test_what_the_agent_said_after_a_cancel_waits_for_the_cancel() -> None:
    assert (
        agent(
            (C, PROMPT),
            (A, chunk("one")),
            (C, note("session/cancel", sessionId="s1")),
            (A, chunk("two")),
            (A, ok(2, {"stopReason": "cancelled"})),
        )
        >> Client(PROMPT)
        << Replays(1)
        >> Client(note("session/cancel", sessionId="s1"))
        << Replays(3)
        << Replays(4)
        >> Client(note("session/cancel", sessionId="s1"))  # a second one was not recorded
        << Problem("unexpected_message")
    )


def test_the_agent_speaks_first_when_it_did_in_the_recording() -> None:
    banner = note("_x/hello", version="1")
    assert (
        agent((A, banner), (C, INIT), (A, INIT_OK))
        >> Start()
        << Replays(0)
        >> Client(b"not json at all")
        << Problem("unexpected_message")
        >> Client(INIT)
        << Replays(2)
        >> Finish()
    )


# -- the client stand-in -------------------------------------------------------------------


def test_the_recorded_client_waits_for_each_answer_and_takes_the_live_session() -> None:
    assert (
        client(*SESSION, cwd=("/rec/ws", "/live/ws"))
        >> Next()
        << Replays(0)
        >> Next()
        << Waits("the answer to recorded #0")
        >> Agent(ok(0, {"protocolVersion": 1}))
        >> Next()
        << Sends(req(1, "session/new", cwd="/live/ws", mcpServers=[]))
        >> Agent(ok(1, {"sessionId": "live-7"}))
        >> Next()
        << Sends({**PROMPT, "params": {**PROMPT["params"], "sessionId": "live-7"}})
        >> Agent(chunk("reading", sid="live-7"))
        >> Agent(req(31, "fs/read_text_file", sessionId="live-7", path="/live/ws/a.py"))
        << Sends(ok(31, {"content": "x = 1\n"}))  # the recorded answer, the live id
        >> Agent(ok(2, {"stopReason": "end_turn"}))
        >> Finish()
    )


def test_an_agent_request_the_recording_never_answered_gets_an_error() -> None:
    assert (
        client(*SESSION)
        >> Next()
        << Replays(0)
        >> Agent(req(3, "fs/write_text_file", sessionId="s1", path="/etc/passwd", content=""))
        << error(
            3,
            -32603,
            "the agent asked fs/write_text_file, which the recording has no "
            "answer for; closest recorded is #6 request fs/read_text_file [0]: method: "
            'recorded "fs/read_text_file", got "fs/write_text_file"',
        )
        << Problem("new_request")
        >> Agent(READ)
        << Replays(7)
        >> Agent(READ)  # agents poll: the same request again gets the same answer
        << Replays(7)
        << Problem("note", 6)
    )


def test_a_cancel_goes_out_after_as_many_chunks_as_were_recorded_before_it() -> None:
    assert (
        client(
            (C, PROMPT),
            (A, chunk("a")),
            (A, chunk("b")),
            (C, note("session/cancel", sessionId="s1")),
            (A, ok(2, {"stopReason": "cancelled"})),
        )
        >> Next()
        << Replays(0)
        >> Next()
        << Waits("the 2nd agent_message_chunk (recorded #2)")
        >> Agent(chunk("other words"))
        >> Next()
        << Waits("the 2nd agent_message_chunk (recorded #2)")
        >> Agent(chunk("same count"))
        >> Next()
        << Replays(3)
    )


def test_a_wait_the_live_agent_ended_is_given_up_and_the_step_sent() -> None:
    assert (
        client(
            (C, PROMPT),
            (A, note("session/update", sessionId="s1", update={"sessionUpdate": "plan"})),
            (C, note("session/cancel", sessionId="s1")),
            (A, ok(2, {"stopReason": "cancelled"})),
        )
        >> Next()
        << Replays(0)
        >> Agent(ok(2, {"stopReason": "end_turn"}))  # the turn ended before any plan
        >> Next()
        << Replays(2)
        << Problem("wait_given_up", 2)
        >> Finish()
    )


def test_an_agent_that_goes_away_leaves_the_rest_unsent_and_unanswered() -> None:
    assert (
        client(*SESSION)
        >> Next()
        << Replays(0)
        >> Finish()
        << Problem("not_sent", 2)
        << Problem("no_answer", 0)
    )

"""The checker as playbooks: frames in, findings out, at the frame that broke the rule.

:meth:`Checker.feed` says at once what a frame broke (``record --check`` prints it live);
``End()`` is :meth:`Checker.finish`, which says what only the end of a capture shows. Each
finding is ``Finding(rule, side, seq)``; a frame's time is given in seconds (``t=``) where a
rule is about time, else frames are a millisecond apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from corpus import CANCEL, END, P1, P2, PERMISSION, PROMPT, TOOL_CALL, A, C, chunk, note, req, res
from corpus import update as session_update
from support.playbook import Playbook

from acp_proxy.check.core.checker import Checker
from acp_proxy.protocol.frames import Direction, Frame

# -- inputs --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sent:
    """A frame: who sent it, the message (a JSON value, or bytes as they are)."""

    direction: Direction
    message: Any
    t: float | None = None
    flags: tuple[str, ...] = ()
    terminated: bool = True


@dataclass(frozen=True)
class End:
    """The capture ended."""


# -- outputs -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    rule: str
    side: str
    seq: int | None


def wire(value: Any) -> bytes:
    import json

    return value if isinstance(value, bytes) else json.dumps(value).encode()


class CheckerDriver:
    def __init__(self, **options: Any) -> None:
        self.checker = Checker(**options)
        self.seq = 0

    def feed(self, item: Any) -> list[Finding]:
        if isinstance(item, End):
            found = self.checker.finish()
        else:
            t = self.seq * 1_000_000 if item.t is None else int(item.t * 1e9)
            frame = Frame(self.seq, item.direction, t, wire(item.message), item.terminated)
            self.seq += 1
            found = self.checker.feed(frame, item.flags)
        return [Finding(f.rule, f.side, f.seq) for f in found]


def checker(*prelude: tuple[Direction, Any], **options: Any) -> Playbook[Any]:
    book: Playbook[Any] = Playbook(CheckerDriver(**options))
    for direction, message in prelude:
        book = book >> Sent(direction, message)
    return book


def c(message: Any, **options: Any) -> Sent:
    return Sent(C, message, **options)


def a(message: Any, **options: Any) -> Sent:
    return Sent(A, message, **options)


# -- the playbooks -------------------------------------------------------------------------


def test_a_clean_v1_turn_breaks_nothing_at_any_frame() -> None:
    assert (
        checker(*P1)
        >> c(PROMPT)
        >> a(chunk())
        >> a(TOOL_CALL)
        >> a(PERMISSION)
        >> c(res(7, {"outcome": {"outcome": "selected", "optionId": "ok"}}))
        >> a(END)
        >> End()
    )


def test_pairing_faults_are_found_at_the_frame_and_the_unanswered_at_the_end() -> None:
    assert (
        checker(*P1)
        >> c(req(5, "_x/a"))
        >> c(req(5, "_x/b"))  # the same id while the first is unanswered
        << Finding("rpc.duplicate-request-id", "client", 5)
        >> a(res(5, {}))
        >> a(res(5, {}))  # answers both: the second has nothing left to answer
        << Finding("rpc.duplicate-response", "agent", 7)
        >> a(res(99, {}))
        << Finding("rpc.unpaired-response", "agent", 8)
        >> c(req(6, "_x/c"))
        >> End()
        << Finding("rpc.unanswered", "agent", 9)
    )


def test_a_turn_the_agent_keeps_talking_after_is_flagged_where_it_talks() -> None:
    assert (
        checker(*P1)
        >> c(PROMPT)
        >> c(req(3, "session/prompt", {"sessionId": "s1", "prompt": []}))  # one turn at a time
        << Finding("turn.concurrent-prompt", "client", 5)
        >> a(END)
        >> a(res(3, {"stopReason": "end_turn"}))
        >> a(chunk("late"))
        << Finding("turn.update-after-turn", "agent", 8)
        >> End()
    )


def test_a_cancel_the_agent_does_not_honour_and_answers_late() -> None:
    assert (
        checker(*P1)
        >> c(PROMPT, t=1.0)
        >> c(CANCEL, t=2.0)
        >> a(chunk(), t=3.0)
        >> a(END, t=40.0)  # the turn ends, not as cancelled, long after the cancel
        << Finding("turn.cancel-not-honoured", "agent", 7)
        << Finding("timing.slow-cancel", "agent", 7)
        >> End()
    )


def test_framing_faults_are_named_frame_by_frame() -> None:
    ping = b'{"jsonrpc":"2.0","method":"_x/ping"}'
    assert (
        checker(*P1)
        >> c(ping + b"\r")
        << Finding("framing.crlf", "client", 4)
        >> c(b"")
        << Finding("framing.empty-line", "client", 5)
        >> a(b"\xef\xbb\xbf" + ping)
        << Finding("framing.bom", "agent", 6)
        >> c(ping, terminated=False)  # the stream ended inside a line
        >> End()
        << Finding("framing.unterminated", "client", 7)
    )


def test_a_line_that_is_not_json_is_judged_once_the_next_line_shows_what_it_was() -> None:
    ping = b'{"jsonrpc":"2.0","method":"_x/ping"}'
    assert (
        checker(*P1)
        >> a(b"Loading model...")  # noise on stdout, or the start of a message cut in two?
        >> a(b'{"jsonrpc":"2.0",')
        >> a(b'"method":"_x/ping"}')  # these two lines are one message cut by a newline
        >> a(ping)
        << Finding("framing.not-json", "agent", 4)
        << Finding("framing.embedded-newline", "agent", 5)
        >> a(ping + b" and more")
        >> a(ping)
        << Finding("framing.trailing-data", "agent", 8)
        >> a(b'{"a":1,"a":2}')  # a readable line is judged at once
        << Finding("json.duplicate-keys", "agent", 10)
        << Finding("rpc.not-jsonrpc", "agent", 10)
        >> End()
    )


def test_lifecycle_faults_before_initialize_and_in_unknown_sessions() -> None:
    assert (
        checker()
        >> c(req(0, "session/new", {"cwd": "/w", "mcpServers": []}))
        << Finding("acp.before-initialize", "client", 0)
        >> a(res(0, {"sessionId": "s1"}))
        >> End()
        << Finding("acp.no-initialize", "-", None)  # the capture as a whole
    )
    assert (
        checker(*P1)
        >> c(req(2, "session/prompt", {"sessionId": "nobody", "prompt": []}))
        << Finding("acp.unknown-session", "client", 4)
    )


def test_an_agent_asking_for_what_the_client_never_offered() -> None:
    no_fs = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
    init = req(0, "initialize", {"protocolVersion": 1, "clientCapabilities": no_fs})
    assert (
        checker((C, init), *P1[1:])
        >> c(PROMPT)
        >> a(req(9, "fs/read_text_file", {"sessionId": "s1", "path": "/work/a"}))
        << Finding("cap.client-method", "agent", 5)
        >> c(res(9, {"content": ""}))
        >> a(END)
        >> End()
    )


def test_the_schema_of_the_negotiated_version_decides() -> None:
    no_content = session_update({"sessionUpdate": "agent_message_chunk"})
    v2_update = session_update({"sessionUpdate": "state_update", "state": "running"})
    assert (
        checker(*P1)
        >> a(no_content)
        << Finding("schema.invalid", "agent", 4)
        >> a(v2_update)  # v1 has no state_update
        << Finding("schema.invalid", "agent", 5)
    )
    assert (
        checker(*P2)
        >> a(v2_update)  # the same frame in a v2 capture
        >> c(note("session/cancel", {"sessionId": "s1"}))
        >> End()
    )


def test_a_slow_answer_is_found_when_it_comes() -> None:
    assert (
        checker(*P1)
        >> c(req(5, "_x/slow"), t=1.0)
        >> a(res(5, {}), t=200.0)
        << Finding("timing.slow-response", "agent", 5)
        >> End()
    )

"""The conformance rules of prompt turns, tool calls, child sessions, replays, timing and
the capture as a whole (pure values): the second half of the table :mod:`acp_proxy.check.core.rules`
holds, each rule as that module describes."""

from __future__ import annotations

from acp_proxy.check.core.findings import ERROR, INFO, WARNING, Rule
from acp_proxy.check.core.findings import rule as _r

__all__ = ["TURN_RULES"]

TURN_RULES: list[Rule] = [
    # -- prompt turns ---------------------------------------------------------------------
    _r(
        "turn.concurrent-prompt",
        ERROR,
        "client",
        "a second session/prompt on a session while one is in flight",
        "prompt-turn",
        versions=(1,),
    ),
    _r(
        "turn.cancel-not-honoured",
        ERROR,
        "agent",
        "session/cancel not answered by the cancelled stop reason",
        "prompt-turn#cancellation",
    ),
    _r(
        "turn.update-after-turn",
        WARNING,
        "agent",
        "turn output for a session after its prompt response",
        "prompt-turn#4-check-for-completion",
        versions=(1,),
    ),
    _r(
        "v1.unknown-tool-call",
        ERROR,
        "agent",
        "tool_call_update for a toolCallId no tool_call announced",
        "tool-calls#updating",
        versions=(1,),
    ),
    _r(
        "v1.terminal-after-release",
        ERROR,
        "agent",
        "a terminalId used after terminal/release",
        "terminals",
        versions=(1,),
    ),
    _r(
        "v2.turn-unfinished",
        ERROR,
        "agent",
        "an accepted prompt never ended by an idle state_update",
        "prompt-lifecycle#session-states",
        versions=(2,),
    ),
    _r(
        "v2.message-id",
        ERROR,
        "agent",
        "a message update without messageId",
        "prompt-lifecycle#3-agent-reports-output",
        versions=(2,),
        covers_schema=True,
    ),
    _r(
        "v2.patch-first-report",
        WARNING,
        "agent",
        "the first update of a tool call without title, or of a terminal without command",
        "tool-calls#reporting",
        versions=(2,),
    ),
    _r(
        "v2.terminal",
        ERROR,
        "agent",
        "agent-owned terminal rules: base64 data, absolute cwd, one update per terminal per batch",
        "tool-calls#content",
        versions=(2,),
    ),
    _r(
        "v2.permission-title",
        ERROR,
        "agent",
        "session/request_permission without a title",
        "tool-calls#requesting-permission",
        versions=(2,),
        covers_schema=True,
    ),
    _r(
        "v2.cancel-capability",
        ERROR,
        "client",
        "tool_call/cancel or terminal/cancel for a target that did not advertise cancel",
        "tool-calls#cancelling-tool-calls",
        versions=(2,),
    ),
    # -- subagents, replays, retries (docs/protocol.md §13) -------------------------------
    _r(
        "subagent.announced-late",
        ERROR,
        "agent",
        "traffic on a child session before the subagent_update that announces it",
        "https://agentclientprotocol.com/protocol/v2/subagents#announcing-a-child-session",
    ),
    _r(
        "subagent.cancel-capability",
        ERROR,
        "client",
        "session/cancel for a child session that does not advertise cancel",
        "https://agentclientprotocol.com/protocol/v2/subagents",
    ),
    _r(
        "subagent.not-advertised",
        ERROR,
        "agent",
        "subagent updates or session content to a v1 client that did not advertise subagents",
        "https://agentclientprotocol.com/protocol/v1/subagents#checking-support",
        versions=(1,),
    ),
    _r(
        "v2.replay-complete",
        ERROR,
        "agent",
        "replay_complete not exactly once, before the response, for a resume with replayFrom",
        "https://agentclientprotocol.com/rfds/v2/session-replay-complete",
        versions=(2,),
    ),
    _r(
        "v2.replay-truncated",
        WARNING,
        "agent",
        "a history replay that ended with neither replay_complete nor a successful response",
        "https://agentclientprotocol.com/rfds/v2/session-replay-complete",
        versions=(2,),
    ),
    _r(
        "v2.live-in-replay",
        ERROR,
        "agent",
        "a live update or request on a session while its history is being replayed",
        "https://agentclientprotocol.com/rfds/v2/session-replay-complete",
        versions=(2,),
    ),
    _r(
        "v2.retry-message-id",
        ERROR,
        "agent",
        "a retried prompt (same idempotencyKey) answered with another messageId",
        "https://agentclientprotocol.com/rfds/v2/idempotency-keys",
        versions=(2,),
    ),
    # -- timing ---------------------------------------------------------------------------
    _r(
        "timing.slow-response",
        WARNING,
        "receiver",
        "a request answered after more than the --slow threshold",
        "overview",
    ),
    _r(
        "timing.slow-cancel",
        WARNING,
        "agent",
        "a cancel honoured after more than the --slow-cancel threshold",
        "prompt-turn#cancellation",
    ),
    # -- the capture itself ---------------------------------------------------------------
    _r(
        "capture.incomplete",
        INFO,
        "-",
        "frames the recorder could not keep whole (not checked)",
        "https://agentclientprotocol.com/protocol/v1/transports",
    ),
]

"""Crafted captures for the checker: a clean prelude per version and one violation per rule.

Each case is a list of frames after (or instead of) the prelude and the exact set of
``(rule, side)`` findings it must give — the rule it is about and nothing else.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import orjson

from acp_proxy.events.ending import CaptureEnd
from acp_proxy.protocol.frames import Direction, Frame, Opcode

C, A = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT
MS = 1_000_000

Payload = dict[str, Any] | bytes
# (direction, payload) or (direction, payload, options) with options: t (seconds),
# terminated, opcode, flags
Entry = tuple[Any, ...]


def req(i: int | str, method: str, params: Any = None) -> dict[str, Any]:
    m: dict[str, Any] = {"jsonrpc": "2.0", "id": i, "method": method}
    if params is not None:
        m["params"] = params
    return m


def note(method: str, params: Any = None) -> dict[str, Any]:
    m: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        m["params"] = params
    return m


def res(i: int | str, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "result": result}


def err(
    i: int | str | None, code: int = -32601, message: str = "Method not found"
) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "error": {"code": code, "message": message}}


def update(u: dict[str, Any], sid: str = "s1") -> dict[str, Any]:
    return note("session/update", {"sessionId": sid, "update": u})


def chunk(text: str = "hi", **extra: Any) -> dict[str, Any]:
    return update(
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}, **extra}
    )


FULL_CLIENT = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}


def prelude_v1(client: Any = None, agent: Any = None) -> list[Entry]:
    return [
        (
            C,
            req(
                0,
                "initialize",
                {
                    "protocolVersion": 1,
                    "clientCapabilities": FULL_CLIENT if client is None else client,
                },
            ),
        ),
        (
            A,
            res(
                0,
                {
                    "protocolVersion": 1,
                    "agentCapabilities": {"loadSession": False} if agent is None else agent,
                },
            ),
        ),
        (C, req(1, "session/new", {"cwd": "/work", "mcpServers": []})),
        (A, res(1, {"sessionId": "s1"})),
    ]


def prelude_v2(agent: Any = None) -> list[Entry]:
    return [
        (
            C,
            req(
                0,
                "initialize",
                {"protocolVersion": 2, "info": {"name": "c", "version": "1"}, "capabilities": {}},
            ),
        ),
        (
            A,
            res(
                0,
                {
                    "protocolVersion": 2,
                    "info": {"name": "a", "version": "1"},
                    "capabilities": {} if agent is None else agent,
                },
            ),
        ),
        (C, req(1, "session/new", {"cwd": "/work"})),
        (A, res(1, {"sessionId": "s1"})),
    ]


def _dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:  # an integer wider than 64 bits
        return json.dumps(value, separators=(",", ":")).encode()


def frames(entries: list[Entry]) -> list[tuple[Frame, tuple[str, ...]]]:
    out = []
    for seq, e in enumerate(entries):
        d, payload = e[0], e[1]
        opts: dict[str, Any] = e[2] if len(e) > 2 else {}
        raw = payload if isinstance(payload, bytes) else _dumps(payload)
        t = int(opts["t"] * 1_000_000_000) if "t" in opts else seq * MS
        frame = Frame(seq, d, t, raw, opts.get("terminated", True), opts.get("opcode"))
        out.append((frame, tuple(opts.get("flags", ()))))
    return out


@dataclass
class Case:
    name: str
    entries: list[Entry]
    expected: set[tuple[str, str]]
    options: dict[str, Any] = field(default_factory=dict)


P1 = prelude_v1()
P2 = prelude_v2()
RESUME = req(
    7, "session/resume", {"sessionId": "s1", "cwd": "/work", "replayFrom": {"type": "start"}}
)
HISTORY = {
    "sessionUpdate": "user_message_chunk",
    "messageId": "u0",
    "content": {"type": "text", "text": "earlier"},
}


def KEYED(i: int) -> dict[str, Any]:
    text = [{"type": "text", "text": "go"}]
    return req(i, "session/prompt", {"sessionId": "s1", "prompt": text, "idempotencyKey": "k1"})


PROMPT = req(2, "session/prompt", {"sessionId": "s1", "prompt": [{"type": "text", "text": "go"}]})
END = res(2, {"stopReason": "end_turn"})
CANCEL = note("session/cancel", {"sessionId": "s1"})
PERMISSION = req(
    7,
    "session/request_permission",
    {
        "sessionId": "s1",
        "toolCall": {"toolCallId": "c1"},
        "options": [
            {"optionId": "ok", "name": "Allow", "kind": "allow_once"},
            {"optionId": "no", "name": "Deny", "kind": "reject_once"},
        ],
    },
)
TOOL_CALL = update({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read"})

CASES = [
    Case(
        "clean v1",
        [
            *P1,
            (C, PROMPT),
            (A, chunk()),
            (A, TOOL_CALL),
            (A, PERMISSION),
            (C, res(7, {"outcome": {"outcome": "selected", "optionId": "ok"}})),
            (A, END),
        ],
        set(),
    ),
    Case(
        "clean v2",
        [
            *P2,
            (C, PROMPT),
            (A, res(2, {"messageId": "m1"})),
            (A, update({"sessionUpdate": "state_update", "state": "running"})),
            (A, chunk(messageId="a1")),
            (
                A,
                update(
                    {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}
                ),
            ),
        ],
        set(),
    ),
    Case(
        "extensions are allowed: _ methods, _meta everywhere, v1",
        [
            *prelude_v1(),
            (C, req(5, "_zed.dev/workspace", {"x": 1, "_meta": {"a": 1}})),
            (A, res(5, {"anything": [1, 2]})),
            (A, note("_zed.dev/notice", {"y": None})),
            (C, {**PROMPT, "params": {**PROMPT["params"], "_meta": {"traceparent": "00-x"}}}),
            (A, chunk(_meta={"zed.dev/debug": True})),
            (A, {**END, "result": {"stopReason": "end_turn", "_meta": {"k": "v"}}}),
        ],
        set(),
    ),
    Case(
        "v2 unknown values take the other branch",
        [
            *P2,
            (A, update({"sessionUpdate": "future_kind", "whatever": {"a": 1}})),
            (
                A,
                update(
                    {
                        "sessionUpdate": "agent_message_chunk",
                        "messageId": "m",
                        "content": {"type": "hologram", "data": 1},
                    }
                ),
            ),
            (A, update({"sessionUpdate": "state_update", "state": "dreaming"})),
        ],
        set(),
    ),
    Case(
        "v2 cancel capability follows patch semantics",
        [
            *P2,
            (
                A,
                update(
                    {
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": "c1",
                        "title": "Run",
                        "capabilities": {"cancel": {}},
                    }
                ),
            ),
            (
                A,
                update(
                    {
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": "c1",
                        "status": "in_progress",
                    }
                ),
            ),  # omitted: kept
            (C, req(5, "tool_call/cancel", {"sessionId": "s1", "toolCallId": "c1"})),
            (A, res(5, {})),
            (
                A,
                update(
                    {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "capabilities": None}
                ),
            ),  # null: cleared
            (C, req(6, "tool_call/cancel", {"sessionId": "s1", "toolCallId": "c1"})),
            (A, err(6, -32602, "Invalid params")),
        ],
        {("v2.cancel-capability", "client")},
    ),
    # -- framing
    Case(
        "stdout log line", [*P1, (A, b"Starting agent v1.2 ...")], {("framing.not-json", "agent")}
    ),
    Case(
        "embedded newline",
        [
            *P1,
            (A, b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1",'),
            (A, b'"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text",'),
            (A, b'"text":"x"}}}}'),
        ],
        {("framing.embedded-newline", "agent")},
    ),
    Case(
        "trailing data",
        [*P1, (A, b'{"jsonrpc":"2.0","method":"_x/ping","params":{}} done')],
        {("framing.trailing-data", "agent")},
    ),
    Case(
        "leading noise",
        [*P1, (A, b'\x1b[0mINFO {"jsonrpc":"2.0","method":"_x/ping"}')],
        {("framing.leading-noise", "agent")},
    ),
    Case(
        "invalid utf-8",
        [*P1, (C, b'{"jsonrpc":"2.0","method":"_x/n","params":{"t":"\xff"}}')],
        {("framing.invalid-utf8", "client")},
    ),
    Case(
        "bom",
        [*P1, (C, b'\xef\xbb\xbf{"jsonrpc":"2.0","method":"_x/n"}')],
        {("framing.bom", "client")},
    ),
    Case("crlf", [*P1, (A, orjson.dumps(chunk()) + b"\r")], {("framing.crlf", "agent")}),
    Case(
        "whitespace", [*P1, (A, b"  " + orjson.dumps(chunk()))], {("framing.whitespace", "agent")}
    ),
    Case("empty line", [*P1, (C, b"")], {("framing.empty-line", "client")}),
    Case(
        "unterminated",
        [*P1, (A, chunk(), {"terminated": False})],
        {("framing.unterminated", "agent")},
    ),
    Case(
        "binary ws message",
        [*P1, (C, b"\x00\x01", {"opcode": Opcode.BINARY})],
        {("framing.binary", "client")},
    ),
    # -- JSON
    Case(
        "NaN",
        [*P1, (A, b'{"jsonrpc":"2.0","method":"_x/n","params":{"v":NaN}}')],
        {("json.non-standard", "agent")},
    ),
    Case(
        "duplicate keys",
        [*P1, (A, b'{"jsonrpc":"2.0","method":"_x/n","method":"_x/m"}')],
        {("json.duplicate-keys", "agent")},
    ),
    Case(
        "lone surrogate",
        [*P1, (A, b'{"jsonrpc":"2.0","method":"_x/n","params":{"t":"\\ud800"}}')],
        {("json.lone-surrogate", "agent")},
    ),
    # -- JSON-RPC
    Case("no jsonrpc version", [*P1, (C, {"method": "_x/n"})], {("rpc.no-version", "client")}),
    Case("not a message", [*P1, (A, {"hello": 1})], {("rpc.not-jsonrpc", "agent")}),
    Case(
        "batch in v1", [*P1, (C, b'[{"jsonrpc":"2.0","method":"_x/n"}]')], {("rpc.batch", "client")}
    ),
    Case("empty batch in v2", [*P2, (C, b"[]")], {("rpc.batch", "client")}),
    Case(
        "invalid error object",
        [
            *P1,
            (C, req(5, "_x/q", {})),
            (A, {"jsonrpc": "2.0", "id": 5, "error": {"code": "bad", "message": "x"}}),
        ],
        {("rpc.invalid-error", "agent")},
    ),
    Case("unpaired response", [*P1, (A, res(99, {}))], {("rpc.unpaired-response", "agent")}),
    Case(
        "duplicate response",
        [*P1, (C, req(5, "_x/q", {})), (A, res(5, {})), (A, res(5, {}))],
        {("rpc.duplicate-response", "agent")},
    ),
    Case(
        "duplicate request id",
        [*P1, (C, req(5, "_x/q", {})), (C, req(5, "_x/q", {})), (A, res(5, {}))],
        {("rpc.duplicate-request-id", "client")},
    ),
    Case("unanswered", [*P1, (C, req(5, "_x/q", {}))], {("rpc.unanswered", "agent")}),
    Case(
        "unanswered: the agent exited first",
        [*P1, (C, req(5, "_x/q", {}))],
        {("rpc.unanswered", "agent")},
        {"ending": CaptureEnd("agent", "exit 3", "agent exited 3")},
    ),
    Case(
        "unanswered: the client ended the capture first",
        [*P1, (C, req(5, "_x/q", {}))],
        {("rpc.cut-short", "capture")},
        {"ending": CaptureEnd("client", "ended by client: SIGTERM", "the client ended it")},
    ),
    # -- schema
    Case(
        "schema: chunk without content",
        [*P1, (A, update({"sessionUpdate": "agent_message_chunk"}))],
        {("schema.invalid", "agent")},
    ),
    Case(
        "schema: bad result",
        [*P1, (C, PROMPT), (A, res(2, {"stopReason": 3}))],
        {("schema.invalid", "agent")},
    ),
    Case(
        "schema: unknown method",
        [*P1, (C, req(5, "session/frobnicate", {})), (A, err(5))],
        {("schema.method", "client")},
    ),
    Case(
        "schema: wrong direction",
        [*P1, (A, req(5, "session/prompt", {"sessionId": "s1", "prompt": []})), (C, err(5))],
        {("schema.method", "agent")},
    ),
    Case(
        "schema: notification sent as request",
        [*P1, (C, req(5, "session/cancel", {"sessionId": "s1"})), (A, err(5))],
        {("schema.method", "client")},
    ),
    Case(
        "schema: unstable method",
        [
            *P1,
            (C, req(5, "session/fork", {"sessionId": "s1", "cwd": "/work"})),
            (A, res(5, {"sessionId": "s2"})),
        ],
        {("schema.unstable", "client")},
    ),
    Case(
        "subagents as newer spec pages define them (stable v1, no bundled schema has them)",
        [
            *prelude_v1(client={**FULL_CLIENT, "subagents": {}}),
            (C, PROMPT),
            (A, update({"sessionUpdate": "subagent_update", "sessionId": "c1", "title": "x"})),
            (A, res(2, {"stopReason": "end_turn"})),
        ],
        {("schema.newer", "agent")},
    ),
    # -- lifecycle and capabilities
    Case(
        "no initialize",
        [(A, chunk())],
        {("acp.no-initialize", "-"), ("acp.before-initialize", "agent")},
    ),
    Case(
        "unknown version",
        [(C, P1[0][1]), (A, res(0, {"protocolVersion": 7}))],
        {("acp.unknown-version", "agent")},
    ),
    Case("before initialize", [P1[0], P1[2], P1[1], P1[3]], {("acp.before-initialize", "client")}),
    Case(
        "unknown session",
        [
            *P1,
            (C, req(2, "session/prompt", {"sessionId": "nope", "prompt": []})),
            (A, err(2, -32002, "Resource not found")),
        ],
        {("acp.unknown-session", "client")},
    ),
    Case(
        "fs without capability",
        [
            *prelude_v1(client={}),
            (A, req(0, "fs/read_text_file", {"sessionId": "s1", "path": "/work/a"})),
            (C, err(0, -32601)),
        ],
        {("cap.client-method", "agent")},
    ),
    Case(
        "terminal without capability",
        [
            *prelude_v1(client={"terminal": False}),
            (A, req(0, "terminal/create", {"sessionId": "s1", "command": "ls"})),
            (C, err(0, -32601)),
        ],
        {("cap.client-method", "agent")},
    ),
    Case(
        "session/load without loadSession",
        [
            *P1,
            (C, req(5, "session/load", {"sessionId": "old", "cwd": "/work", "mcpServers": []})),
            (A, err(5)),
        ],
        {("cap.agent-method", "client")},
    ),
    Case(
        "image without promptCapabilities",
        [
            *P1,
            (
                C,
                req(
                    2,
                    "session/prompt",
                    {
                        "sessionId": "s1",
                        "prompt": [{"type": "image", "data": "aGk=", "mimeType": "image/png"}],
                    },
                ),
            ),
            (A, END),
        ],
        {("cap.prompt-content", "client")},
    ),
    Case(
        "http MCP server without mcpCapabilities",
        [
            *P1,
            (
                C,
                req(
                    5,
                    "session/new",
                    {
                        "cwd": "/work",
                        "mcpServers": [
                            {
                                "type": "http",
                                "name": "m",
                                "url": "http://127.0.0.1:1/mcp",
                                "headers": [],
                            }
                        ],
                    },
                ),
            ),
            (A, res(5, {"sessionId": "s2"})),
        ],
        {("cap.mcp-transport", "client")},
    ),
    Case(
        "permission option not offered",
        [
            *P1,
            (C, PROMPT),
            (A, TOOL_CALL),
            (A, PERMISSION),
            (C, res(7, {"outcome": {"outcome": "selected", "optionId": "maybe"}})),
            (A, END),
        ],
        {("acp.permission-option", "client")},
    ),
    # -- turns
    Case(
        "concurrent prompt",
        [
            *P1,
            (C, PROMPT),
            (C, {**PROMPT, "id": 3}),
            (A, END),
            (A, res(3, {"stopReason": "end_turn"})),
        ],
        {("turn.concurrent-prompt", "client")},
    ),
    Case(
        "cancel not honoured v1",
        [*P1, (C, PROMPT), (C, CANCEL), (A, END)],
        {("turn.cancel-not-honoured", "agent")},
    ),
    Case(
        "update after turn",
        [*P1, (C, PROMPT), (A, END), (A, chunk())],
        {("turn.update-after-turn", "agent")},
    ),
    Case(
        "unknown tool call",
        [
            *P1,
            (C, PROMPT),
            (A, update({"sessionUpdate": "tool_call_update", "toolCallId": "ghost"})),
            (A, END),
        ],
        {("v1.unknown-tool-call", "agent")},
    ),
    Case(
        "terminal after release",
        [
            *P1,
            (A, req(0, "terminal/create", {"sessionId": "s1", "command": "ls"})),
            (C, res(0, {"terminalId": "t1"})),
            (A, req(1, "terminal/release", {"sessionId": "s1", "terminalId": "t1"})),
            (C, res(1, {})),
            (A, req(2, "terminal/output", {"sessionId": "s1", "terminalId": "t1"})),
            (C, res(2, {"output": "", "truncated": False})),
        ],
        {("v1.terminal-after-release", "agent")},
    ),
    Case(
        "a child session's traffic before its announcement",
        [
            *P2,
            (
                A,
                update(
                    {
                        "sessionUpdate": "agent_message_chunk",
                        "messageId": "m",
                        "content": {"type": "text", "text": "x"},
                    },
                    "c1",
                ),
            ),
            (A, update({"sessionUpdate": "subagent_update", "sessionId": "c1"})),
        ],
        {("acp.unknown-session", "agent"), ("subagent.announced-late", "agent")},
    ),
    Case(
        "session/cancel for a child that does not advertise cancel",
        [
            *P2,
            (
                A,
                update(
                    {
                        "sessionUpdate": "subagent_update",
                        "sessionId": "c1",
                        "capabilities": {"cancel": {}},
                    }
                ),
            ),
            (
                A,
                update(
                    {"sessionUpdate": "subagent_update", "sessionId": "c1", "capabilities": None}
                ),
            ),
            (C, note("session/cancel", {"sessionId": "c1"})),
        ],
        {("subagent.cancel-capability", "client")},
    ),
    Case(
        "session/cancel for a child that advertises cancel",
        [
            *P2,
            (
                A,
                update(
                    {
                        "sessionUpdate": "subagent_update",
                        "sessionId": "c1",
                        "capabilities": {"cancel": {}},
                    }
                ),
            ),
            (C, note("session/cancel", {"sessionId": "c1"})),
        ],
        set(),
    ),
    Case(
        "v1 subagent updates to a client that did not opt in",
        [*P1, (A, update({"sessionUpdate": "subagent_update", "sessionId": "c1"}))],
        {("subagent.not-advertised", "agent"), ("schema.newer", "agent")},
    ),
    Case(
        "v2 resume with replayFrom answered before replay_complete",
        [*P2, (C, RESUME), (A, update(HISTORY)), (A, res(7, {}))],
        {("v2.replay-complete", "agent")},
    ),
    Case(
        "v2 replay_complete without replayFrom",
        [*P2, (A, update({"sessionUpdate": "replay_complete"}))],
        {("v2.replay-complete", "agent")},
    ),
    Case(
        "v2 replay that fails before its marker",
        [*P2, (C, RESUME), (A, update(HISTORY)), (A, err(7, -32603, "disk"))],
        {("v2.replay-truncated", "agent")},
    ),
    Case(
        "v2 live state in the middle of a replay",
        [
            *P2,
            (C, RESUME),
            (A, update(HISTORY)),
            (A, update({"sessionUpdate": "state_update", "state": "running"})),
            (A, update({"sessionUpdate": "replay_complete"})),
            (A, res(7, {})),
        ],
        {("v2.live-in-replay", "agent")},
    ),
    Case(
        "v2 retried prompt answered with a new messageId",
        [
            *P2,
            (C, KEYED(2)),
            (A, res(2, {"messageId": "m1"})),
            (C, KEYED(3)),
            (A, res(3, {"messageId": "m2"})),
            (
                A,
                update(
                    {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}
                ),
            ),
        ],
        {("v2.retry-message-id", "agent")},
    ),
    Case(
        "v2 turn never idle",
        [*P2, (C, PROMPT), (A, res(2, {"messageId": "m1"}))],
        {("v2.turn-unfinished", "agent")},
    ),
    Case(
        "v2 cancel not honoured",
        [
            *P2,
            (C, PROMPT),
            (A, res(2, {"messageId": "m1"})),
            (C, CANCEL),
            (
                A,
                update(
                    {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}
                ),
            ),
        ],
        {("turn.cancel-not-honoured", "agent")},
    ),
    Case("v2 chunk without messageId", [*P2, (A, chunk())], {("v2.message-id", "agent")}),
    Case(
        "v2 first tool update without title",
        [
            *P2,
            (
                A,
                update(
                    {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "pending"}
                ),
            ),
        ],
        {("v2.patch-first-report", "agent")},
    ),
    Case(
        "v2 terminal chunk not base64",
        [
            *P2,
            (A, update({"sessionUpdate": "terminal_update", "terminalId": "t1", "command": "ls"})),
            (
                A,
                update(
                    {
                        "sessionUpdate": "terminal_output_chunk",
                        "terminalId": "t1",
                        "data": "!!not base64!!",
                    }
                ),
            ),
        ],
        {("v2.terminal", "agent")},
    ),
    Case(
        "v2 terminal relative cwd",
        [
            *P2,
            (
                A,
                update(
                    {
                        "sessionUpdate": "terminal_update",
                        "terminalId": "t1",
                        "command": "ls",
                        "cwd": "work",
                    }
                ),
            ),
        ],
        {("v2.terminal", "agent")},
    ),
    Case(
        "v2 two updates of a terminal in one batch",
        [
            *P2,
            (
                A,
                b"["
                + orjson.dumps(
                    update(
                        {"sessionUpdate": "terminal_update", "terminalId": "t1", "command": "ls"}
                    )
                )
                + b","
                + orjson.dumps(
                    update(
                        {
                            "sessionUpdate": "terminal_output_chunk",
                            "terminalId": "t1",
                            "data": "aGk=",
                        }
                    )
                )
                + b"]",
            ),
        ],
        {("v2.terminal", "agent")},
    ),
    Case(
        "v2 permission without title",
        [
            *P2,
            (
                A,
                req(
                    7,
                    "session/request_permission",
                    {
                        "sessionId": "s1",
                        "options": [{"optionId": "ok", "name": "Allow", "kind": "allow_once"}],
                    },
                ),
            ),
            (C, res(7, {"outcome": {"outcome": "cancelled"}})),
        ],
        {("v2.permission-title", "agent")},
    ),
    Case(
        "v2 cancel of a tool call without cancel capability",
        [
            *P2,
            (A, update({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "title": "Run"})),
            (C, req(5, "tool_call/cancel", {"sessionId": "s1", "toolCallId": "c1"})),
            (A, err(5, -32602, "Invalid params")),
        ],
        {("v2.cancel-capability", "client")},
    ),
    # -- timing
    Case(
        "slow response",
        [*P1, (C, req(5, "_x/q", {}), {"t": 1}), (A, res(5, {}), {"t": 100})],
        {("timing.slow-response", "agent")},
    ),
    Case(
        "slow cancel",
        [
            *P1,
            (C, PROMPT, {"t": 1}),
            (C, CANCEL, {"t": 2}),
            (A, res(2, {"stopReason": "cancelled"}), {"t": 30}),
        ],
        {("timing.slow-cancel", "agent")},
    ),
    # -- the capture
    Case(
        "incomplete frame",
        [
            *P1,
            (
                A,
                b'{"jsonrpc":"2.0","method":"session/upd',
                {"flags": ["split"], "terminated": False},
            ),
        ],
        {("capture.incomplete", "-")},
    ),
]

"""The conformance rules: the table of every rule ``acp-proxy check`` applies (pure values).

What belongs here: one :class:`~acp_proxy.check.core.findings.Rule` per check, with its id,
severity, the side normally at fault, the protocol versions it applies to, a one-line title
and the page of the ACP specification it comes from; the checks that raise them are the
other modules of this package. ``docs/check.md`` explains each rule in prose; a test keeps
the two in step.
"""

from __future__ import annotations

from acp_proxy.check.core.findings import ERROR, INFO, WARNING, Rule
from acp_proxy.check.core.findings import rule as _r
from acp_proxy.check.core.rules_turns import TURN_RULES

__all__ = ["RULES"]


_LIST = [
    # -- framing: stdio is one UTF-8 JSON-RPC message per line, nothing else --------------
    _r(
        "framing.not-json",
        ERROR,
        "sender",
        "a line that is not JSON (logs on stdout?)",
        "transports#stdio",
    ),
    _r(
        "framing.embedded-newline",
        ERROR,
        "sender",
        "a message broken over several lines by a raw newline",
        "transports#stdio",
    ),
    _r(
        "framing.trailing-data",
        ERROR,
        "sender",
        "bytes after the JSON message on its line",
        "transports#stdio",
    ),
    _r(
        "framing.leading-noise",
        ERROR,
        "sender",
        "bytes before the JSON message on its line",
        "transports#stdio",
    ),
    _r(
        "framing.invalid-utf8",
        ERROR,
        "sender",
        "a line that is not valid UTF-8",
        "transports#stdio",
    ),
    _r("framing.bom", ERROR, "sender", "a byte order mark before the message", "transports#stdio"),
    _r("framing.crlf", WARNING, "sender", "a line ended by CRLF instead of LF", "transports#stdio"),
    _r(
        "framing.whitespace",
        WARNING,
        "sender",
        "spaces or tabs around the message",
        "transports#stdio",
    ),
    _r("framing.empty-line", WARNING, "sender", "an empty line", "transports#stdio"),
    _r(
        "framing.unterminated",
        WARNING,
        "sender",
        "the last line has no newline",
        "transports#stdio",
    ),
    _r(
        "framing.binary",
        WARNING,
        "sender",
        "a binary WebSocket message (receivers ignore it)",
        "transports",
    ),
    # -- JSON ---------------------------------------------------------------------------
    _r(
        "json.non-standard",
        ERROR,
        "sender",
        "NaN or Infinity, which JSON does not have",
        "https://www.rfc-editor.org/rfc/rfc8259#section-6",
    ),
    _r(
        "json.duplicate-keys",
        WARNING,
        "sender",
        "an object with the same key twice",
        "https://www.rfc-editor.org/rfc/rfc8259#section-4",
    ),
    _r(
        "json.lone-surrogate",
        WARNING,
        "sender",
        "a string with an unpaired surrogate escape",
        "https://www.rfc-editor.org/rfc/rfc8259#section-8.2",
    ),
    # -- JSON-RPC -------------------------------------------------------------------------
    _r("rpc.no-version", ERROR, "sender", 'a message without "jsonrpc": "2.0"', "overview"),
    _r(
        "rpc.not-jsonrpc",
        ERROR,
        "sender",
        "JSON that is not a request, notification or response",
        "overview",
    ),
    _r(
        "rpc.batch",
        ERROR,
        "sender",
        "a batch where none is allowed (v1), or an empty one",
        "transports#stdio",
    ),
    _r(
        "rpc.invalid-error",
        ERROR,
        "sender",
        "an error object that is not JSON-RPC {code: integer, message: string}",
        "https://www.jsonrpc.org/specification#error_object",
    ),
    _r(
        "rpc.unpaired-response",
        ERROR,
        "sender",
        "a response to a request that was never sent",
        "overview",
    ),
    _r(
        "rpc.duplicate-response",
        ERROR,
        "sender",
        "a second response to the same request",
        "overview",
    ),
    _r(
        "rpc.duplicate-request-id",
        ERROR,
        "sender",
        "a request id reused while still pending",
        "overview",
    ),
    _r(
        "rpc.unanswered",
        ERROR,
        "receiver",
        "a request never answered by the end of the capture",
        "overview",
    ),
    _r(
        "rpc.cut-short",
        INFO,
        "capture",
        "a request left unanswered when the client or the proxy ended the capture",
        "overview",
    ),
    # -- schema ---------------------------------------------------------------------------
    _r(
        "schema.invalid",
        ERROR,
        "sender",
        "a message that does not match the ACP JSON Schema",
        "schema",
    ),
    _r(
        "schema.method",
        ERROR,
        "sender",
        "a method ACP does not define for this direction (custom methods start with _)",
        "extensibility",
    ),
    _r(
        "schema.newer",
        INFO,
        "sender",
        "valid only as spec pages newer than the bundled schemas define it",
        "https://agentclientprotocol.com/protocol/v2/subagents",
    ),
    _r(
        "schema.unstable",
        WARNING,
        "sender",
        "valid only under the unstable schema (check with --unstable)",
        "schema",
    ),
    # -- lifecycle and capabilities -------------------------------------------------------
    _r(
        "acp.no-initialize",
        INFO,
        "-",
        "no initialize in the capture: the version is assumed",
        "initialization",
    ),
    _r(
        "acp.unknown-version",
        WARNING,
        "agent",
        "a protocol version with no schema here",
        "initialization#version-negotiation",
    ),
    _r(
        "acp.before-initialize",
        ERROR,
        "sender",
        "a method before initialize completed",
        "initialization",
    ),
    _r(
        "acp.unknown-session",
        ERROR,
        "sender",
        "a sessionId no session/new, load, resume, fork or list produced",
        "session-setup#session-id",
    ),
    _r(
        "cap.client-method",
        ERROR,
        "agent",
        "a client method the client did not advertise (fs, terminal, elicitation)",
        "initialization#client-capabilities",
    ),
    _r(
        "cap.agent-method",
        ERROR,
        "client",
        "an agent method the agent did not advertise (loadSession, session capabilities, logout)",
        "initialization#agent-capabilities",
    ),
    _r(
        "cap.prompt-content",
        ERROR,
        "client",
        "prompt content the agent did not advertise (image, audio, embedded resource)",
        "initialization#prompt-capabilities",
    ),
    _r(
        "cap.mcp-transport",
        ERROR,
        "client",
        "an MCP server transport the agent did not advertise",
        "session-setup#mcp-servers",
    ),
    _r(
        "acp.permission-option",
        ERROR,
        "client",
        "a permission outcome whose optionId was not offered",
        "tool-calls#requesting-permission",
    ),
]

RULES: dict[str, Rule] = {r.id: r for r in [*_LIST, *TURN_RULES]}

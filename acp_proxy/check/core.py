"""Passive conformance checking of recorded frames (pure, no I/O).

What belongs here: :class:`Checker`, which takes the frames of one capture in ``seq`` order
(both directions) and returns :class:`~acp_proxy.check.rules.Finding` values: framing (from
the anomalies :func:`~acp_proxy.protocol.jsonrpc.classify` names and the recorder's own
flags), JSON-RPC pairing (the one rule of :mod:`acp_proxy.protocol.pairing`), the ACP JSON
Schema of the version ``initialize`` negotiated, and the behaviour rules of
:mod:`acp_proxy.check.rules`. :meth:`Checker.feed` returns what a frame broke at once (so a
live recorder can print it); :meth:`Checker.finish` what only the end of the capture shows.

Everything a frame carries is hostile: any value in any field must produce findings, never
an exception.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from acp_proxy.check.rules import RULES, Finding
from acp_proxy.check.schemas import Schemas, load_schemas
from acp_proxy.protocol.frames import Direction, Frame
from acp_proxy.protocol.jsonrpc import Info, Kind, classify
from acp_proxy.protocol.pairing import Pairing

__all__ = ["Checker", "Thresholds", "check_frames"]

_SEC = 1_000_000_000
# Recorder flags that mean the frame is not the whole message the peer sent.
_INCOMPLETE = frozenset({"split", "truncated", "resumed"})
_FRAMING = {
    "crlf": "framing.crlf",
    "bom": "framing.bom",
    "invalid_utf8": "framing.invalid-utf8",
    "leading_noise": "framing.leading-noise",
    "whitespace": "framing.whitespace",
    "duplicate_keys": "json.duplicate-keys",
    "nan": "json.non-standard",
    "lone_surrogate": "json.lone-surrogate",
    "no_version": "rpc.no-version",
}
_REASON = {
    "framing.crlf": "the line ends with CRLF; ACP stdio lines end with LF only",
    "framing.bom": "a UTF-8 byte order mark precedes the JSON",
    "framing.invalid-utf8": "the line is not valid UTF-8",
    "framing.leading-noise": "bytes precede the JSON message on this line",
    "framing.whitespace": "whitespace surrounds the JSON message",
    "json.duplicate-keys": "an object has the same key twice",
    "json.non-standard": "NaN or Infinity is not JSON",
    "json.lone-surrogate": "a string holds an unpaired surrogate escape",
    "rpc.no-version": 'the message lacks "jsonrpc": "2.0"',
}
_HUMAN_METHODS = frozenset({"session/request_permission", "elicitation/create"})
_TURN_OUTPUT_V1 = frozenset(
    {
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
    }
)
_MESSAGE_UPDATES_V2 = frozenset(
    {
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
        "user_message",
        "agent_message",
        "agent_thought",
    }
)
_V1_TERMINAL = frozenset(
    {"terminal/output", "terminal/wait_for_exit", "terminal/kill", "terminal/release"}
)
_SESSION_INTRODUCERS = frozenset({"session/load", "session/resume"})
_ANSWERED_LIMIT = 100_000
_EXCERPT = 160


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Timing warnings, in seconds."""

    slow_response: float = 60.0
    slow_cancel: float = 10.0


@dataclass(slots=True)
class _Request:
    seq: int
    t_ns: int
    method: str | None
    params: dict[str, Any]
    direction: Direction


@dataclass(slots=True)
class _Session:
    prompt: _Request | None = None  # v1: the prompt in flight
    cancel: _Request | None = None  # the session/cancel of the turn in flight
    turns: int = 0
    tool_calls: set[str] = field(default_factory=set)
    released: dict[str, int] = field(default_factory=dict)  # v1 terminalId -> release seq
    turn_open: _Request | None = None  # v2: the accepted prompt whose turn has not ended
    idle_early: bool = False  # v2: the turn went idle before its prompt was acknowledged
    cancellable_tools: set[str] = field(default_factory=set)
    cancellable_terminals: set[str] = field(default_factory=set)
    seen_tools: set[str] = field(default_factory=set)
    seen_terminals: set[str] = field(default_factory=set)


_SIDE = {Direction.CLIENT_TO_AGENT: "client", Direction.AGENT_TO_CLIENT: "agent"}
_OTHER = {Direction.CLIENT_TO_AGENT: "agent", Direction.AGENT_TO_CLIENT: "client"}
_INT64 = range(-(2**63), 2**63)


def _sender(direction: Direction) -> str:
    return _SIDE[direction]


def _receiver(direction: Direction) -> str:
    return _OTHER[direction]


def _excerpt(raw: bytes) -> str:
    text = raw[: _EXCERPT * 4].decode("utf-8", "backslashreplace")
    return text if len(text) <= _EXCERPT else text[:_EXCERPT] + "…"


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _marker(v: Any) -> bool:
    """A v2 support marker (an object) or a v1 boolean flag."""
    return v is True or isinstance(v, dict)


class Checker:
    """Check one capture, frame by frame. ``version`` forces the protocol version (else
    ``initialize`` decides, v1 when there is none); ``unstable`` validates against the
    unstable schemas; ``ignore`` drops rule ids."""

    def __init__(
        self,
        *,
        version: int | None = None,
        unstable: bool = False,
        ignore: Iterable[str] = (),
        thresholds: Thresholds | None = None,
        keep_per_rule: int | None = None,
    ) -> None:
        self.forced = version
        # with a bound, only the first findings of each rule are kept; every one is counted
        self.keep_per_rule = keep_per_rule
        self.counts: dict[str, int] = {}
        self.version: int = version or 1
        self.unstable = unstable
        self.ignore = frozenset(ignore)
        self.thresholds = thresholds or Thresholds()
        self.findings: list[Finding] = []
        self.frames = 0
        self._pairing: Pairing[_Request] = Pairing()
        self._answered: dict[tuple[Direction, str], int] = {}
        self._client_caps: dict[str, Any] = {}
        self._agent_caps: dict[str, Any] = {}
        self._init_sent = False
        self._init_done = False
        self._no_schema = False
        self._sessions: dict[str, _Session] = {}
        self._incomplete = 0
        self._broken: dict[Direction, list[tuple[int, bytes]]] = {}
        self._last: dict[Direction, Frame] = {}
        self._out: list[Finding] = []
        self._seq = 0
        self._raw = b""

    # -- entry points ----------------------------------------------------------------------

    def feed(self, frame: Frame, flags: Sequence[str] = ()) -> list[Finding]:
        """Check one frame (``flags``: what the recorder noted about it); the findings it
        raised."""
        self._out = []
        self._seq = frame.seq
        self._raw = frame.raw
        self.frames += 1
        if not flags or not _INCOMPLETE.intersection(flags):
            self._last[frame.direction] = frame
        try:
            self._frame(frame, flags)
        except Exception as e:  # a hostile value we did not foresee: say so, never crash
            self._add("capture.incomplete", "-", f"not checked: {type(e).__name__}")
        return self._emit()

    def finish(self) -> list[Finding]:
        """What the end of the capture shows: unanswered requests, unfinished turns."""
        self._out = []
        self._seq = -1
        self._raw = b""
        for direction, broken in self._broken.items():
            self._flush_broken(direction, broken)
        self._broken.clear()
        for frame in self._last.values():
            if frame.opcode is None and not frame.terminated:
                self._seq, self._raw = frame.seq, frame.raw
                self._add(
                    "framing.unterminated",
                    _sender(frame.direction),
                    "the stream ended without a newline after this line",
                )
        for direction, _token, req in self._pairing.outstanding():
            self._seq, self._raw = req.seq, b""
            self._add("rpc.unanswered", _receiver(direction), f"{req.method} was never answered")
        for sid, s in self._sessions.items():
            if s.turn_open is not None:
                self._seq = s.turn_open.seq
                self._add(
                    "v2.turn-unfinished",
                    "agent",
                    f"the turn of session {sid} never reached state idle",
                )
        if self._incomplete:
            self._seq = -1
            self._add(
                "capture.incomplete",
                "-",
                f"{self._incomplete} frames were not recorded whole and were not checked",
            )
        if not self._init_sent and self.frames and self.forced is None:
            self._add("acp.no-initialize", "-", "no initialize: checked as ACP v1")
        return self._emit()

    # -- findings --------------------------------------------------------------------------

    def _add(self, rule_id: str, side: str, message: str, related: Sequence[int] = ()) -> None:
        if rule_id in self.ignore:
            return
        r = RULES[rule_id]
        if self.version not in r.versions:
            return
        seq = None if self._seq < 0 else self._seq
        self._out.append(
            Finding(
                rule_id, r.severity, side, seq, message, _excerpt(self._raw), tuple(related), r.spec
            )
        )

    def _emit(self) -> list[Finding]:
        out = self._out
        covered = {f.seq for f in out if RULES[f.rule].covers_schema}
        if covered:
            out = [f for f in out if not (f.rule == "schema.invalid" and f.seq in covered)]
        for f in out:
            n = self.counts.get(f.rule, 0)
            self.counts[f.rule] = n + 1
            if self.keep_per_rule is None or n < self.keep_per_rule:
                self.findings.append(f)
        self._out = []
        return out

    # -- framing ---------------------------------------------------------------------------

    def _frame(self, frame: Frame, flags: Sequence[str]) -> None:
        d = frame.direction
        side = _sender(d)
        if flags and _INCOMPLETE.intersection(flags):
            self._incomplete += 1
            return
        if frame.opcode is not None and frame.opcode.value == "binary":
            self._add("framing.binary", side, "a binary WebSocket message carries no ACP message")
            return
        info = classify(frame.raw)
        anomalies = info.anomalies
        unreadable = info.kind == Kind.INVALID and ("not_json" in anomalies or "empty" in anomalies)
        if unreadable or ("leading_noise" in anomalies and _trailing(frame.raw)):
            if "empty" in anomalies:
                self._add("framing.empty-line", side, "an empty line")
                return
            self._broken.setdefault(d, []).append((frame.seq, frame.raw))
            if len(self._broken[d]) > 64:
                self._flush_broken(d, self._broken.pop(d))
            return
        if d in self._broken:
            self._flush_broken(d, self._broken.pop(d))
            self._seq, self._raw = frame.seq, frame.raw
        for a in anomalies:
            rid = _FRAMING.get(a)
            if a == "no_version" and "not_jsonrpc" in anomalies:
                continue  # not a message at all: said once, by rpc.not-jsonrpc
            if rid is not None:
                self._add(rid, side, _REASON[rid])
        if "big_int" in anomalies:  # exact integers kept as their text: numbers again
            info.value = _numbers(info.value)
        if info.kind == Kind.BATCH:
            self._batch(frame, info)
            return
        self._message(frame, info, info.value)

    def _flush_broken(self, d: Direction, broken: list[tuple[int, bytes]]) -> None:
        """Lines of one direction that were not JSON: a message broken over several lines
        by raw newlines, JSON with bytes after it, or plain text (logs on stdout)."""
        side = _sender(d)
        i = 0
        while i < len(broken):
            seq, raw = broken[i]
            self._seq, self._raw = seq, raw
            joined = _joins(broken, i)
            if joined:
                self._add(
                    "framing.embedded-newline",
                    side,
                    f"frames {seq}..{broken[i + joined - 1][0]} are one message "
                    "split by raw newlines",
                    [s for s, _ in broken[i + 1 : i + joined]],
                )
                i += joined
                continue
            if _trailing(raw):
                self._add(
                    "framing.trailing-data",
                    side,
                    "a JSON message is followed by more bytes on the same line",
                )
            else:
                who = (
                    "the agent wrote non-ACP output to stdout (logs?)"
                    if side == "agent"
                    else "the client wrote non-ACP input to the agent's stdin"
                )
                self._add("framing.not-json", side, f"not JSON: {who}")
            i += 1

    # -- messages --------------------------------------------------------------------------

    def _batch(self, frame: Frame, info: Info) -> None:
        side = _sender(frame.direction)
        items = info.items or []
        if self.version == 1:
            self._add("rpc.batch", side, "ACP v1 has no JSON-RPC batches")
        elif not items:
            self._add("rpc.batch", side, "an empty batch")
        values = info.value if isinstance(info.value, list) else []
        terminals: dict[str, int] = {}
        for item, value in zip(items, values, strict=False):
            if item.kind == Kind.INVALID:
                self._add("rpc.not-jsonrpc", side, "a batch entry that is not a JSON-RPC message")
                continue
            self._message(frame, item, value)
            if (
                item.method == "session/update"
                and item.update_kind in ("terminal_update", "terminal_output_chunk")
                and item.terminal_id is not None
            ):
                terminals[item.terminal_id] = terminals.get(item.terminal_id, 0) + 1
        for tid, n in terminals.items():
            if n > 1:
                self._add(
                    "v2.terminal",
                    side,
                    f"{n} updates of terminal {tid} in one batch (their order is lost)",
                )

    def _message(self, frame: Frame, info: Info, value: Any) -> None:
        d = frame.direction
        side = _sender(d)
        if info.kind == Kind.INVALID:
            self._add("rpc.not-jsonrpc", side, "JSON, but not a request, notification or response")
            return
        body = _dict(value)
        if info.kind in (Kind.REQUEST, Kind.NOTIFICATION):
            self._call(frame, info, body)
        else:
            self._answer(frame, info, body)

    def _call(self, frame: Frame, info: Info, body: dict[str, Any]) -> None:
        d = frame.direction
        side = _sender(d)
        method = info.method or ""
        params = _dict(body.get("params"))
        req = _Request(frame.seq, frame.t_ns, method, params, d)
        if info.kind == Kind.REQUEST and info.id is not None:
            if self._pairing.request(d, info.id, req):
                self._add(
                    "rpc.duplicate-request-id",
                    side,
                    f"request id {info.id} is reused while still pending",
                )
            self._answered.pop((d, info.id), None)
        if method == "initialize" and d is Direction.CLIENT_TO_AGENT:
            self._initialize_request(params)
        elif not self._init_done and not method.startswith("$/"):
            self._add("acp.before-initialize", side, f"{method} before initialize completed")
        self._schema_call(info, body, method, side, params)
        if not method.startswith("_"):
            self._behaviour_call(frame, info, method, params)

    def _answer(self, frame: Frame, info: Info, body: dict[str, Any]) -> None:
        d = frame.direction
        side = _sender(d)
        token = info.id or "null"
        is_error = info.kind == Kind.ERROR
        req, how = self._pairing.response(d, token, error=is_error)
        if is_error:
            self._check_error(body, side)
        if req is None:
            if how == "null_id":
                return  # an error answering a frame that could not be read
            key = (d.opposite, token)
            if key in self._answered:
                self._add(
                    "rpc.duplicate-response",
                    side,
                    f"a second response to request {token}",
                    [self._answered[key]],
                )
            else:
                self._add(
                    "rpc.unpaired-response",
                    side,
                    f"a response to request {token}, which was never sent",
                )
            return
        self._answered[(d.opposite, token)] = req.seq
        if len(self._answered) > _ANSWERED_LIMIT:
            del self._answered[next(iter(self._answered))]
        latency = (frame.t_ns - req.t_ns) / _SEC
        if (
            latency > self.thresholds.slow_response
            and req.method not in _HUMAN_METHODS
            and not (req.method == "session/prompt" and self.version == 1)
        ):
            self._add(
                "timing.slow-response",
                side,
                f"{req.method} answered after {latency:.1f} s",
                [req.seq],
            )
        result = body.get("result")
        if not is_error and req.method and not req.method.startswith("_"):
            self._schema_result(req, result, side)
        self._behaviour_answer(frame, req, result, is_error)

    def _check_error(self, body: dict[str, Any], side: str) -> None:
        err = body.get("error")
        if not isinstance(err, dict):
            self._add("rpc.invalid-error", side, "error is not an object")
            return
        code, message = err.get("code"), err.get("message")
        if code.__class__ is not int:
            self._add("rpc.invalid-error", side, "error.code is not an integer")
        elif not isinstance(message, str):
            self._add("rpc.invalid-error", side, "error.message is not a string")
        else:
            s = self._schemas(self.unstable)
            if s is not None:
                self._validate(s, "Error", err, side, "the error object")

    # -- schema ----------------------------------------------------------------------------

    def _schemas(self, unstable: bool) -> Schemas | None:
        if self._no_schema:
            return None
        return load_schemas(self.version, unstable)

    def _schema_call(
        self, info: Info, body: dict[str, Any], method: str, side: str, params: dict[str, Any]
    ) -> None:
        s = self._schemas(self.unstable)
        if s is None:
            return
        if "id" in body:
            ident = body["id"]
            plain = ident.__class__ is str or (ident.__class__ is int and ident in _INT64)
            if not plain and not s.is_valid("RequestId", ident):
                self._add("schema.invalid", side, f"id {info.id} is not a valid request id")
        if method.startswith("_") or (method.startswith("$/") and s.lookup(method, side) is None):
            return  # extensions, and protocol messages receivers may ignore
        mt = s.lookup(method, side)
        if mt is None:
            if not self.unstable:
                u = self._schemas(True)
                if u is not None and u.lookup(method, side) is not None:
                    self._add("schema.unstable", side, f"{method} is in the unstable schema only")
                    return
            if s.handled_by(method):
                self._add(
                    "schema.method",
                    side,
                    f"{method} is handled by the {side}: only the other side sends it",
                )
            else:
                self._add(
                    "schema.method",
                    side,
                    f"{method} is not an ACP v{self.version} method (custom methods start with _)",
                )
            return
        want = mt.request if info.kind == Kind.REQUEST else mt.notification
        if want is None:
            kind = "notification" if info.kind == Kind.REQUEST else "request"
            self._add("schema.method", side, f"{method} is a {kind}, sent as a {info.kind}")
            return
        self._validate(s, want, body.get("params"), side, method)

    def _schema_result(self, req: _Request, result: Any, side: str) -> None:
        s = self._schemas(self.unstable)
        if s is None or req.method is None:
            return
        mt = s.lookup(req.method, _sender(req.direction))
        if mt is None or mt.response is None:
            return
        self._validate(s, mt.response, result, side, f"the result of {req.method}")

    def _validate(self, s: Schemas, definition: str, value: Any, side: str, what: str) -> None:
        if s.is_valid(definition, value):
            return
        if not self.unstable:
            u = self._schemas(True)
            if u is not None and u.is_valid(definition, value):
                self._add(
                    "schema.unstable", side, f"{what} is valid only under the unstable {definition}"
                )
                return
        reasons = s.explain(definition, value) or ["does not match"]
        self._add("schema.invalid", side, f"{what} ({definition}): " + "; ".join(reasons))

    # -- initialize ------------------------------------------------------------------------

    def _initialize_request(self, params: dict[str, Any]) -> None:
        self._init_sent = True
        self._client_caps = _dict(params.get("clientCapabilities", params.get("capabilities")))
        v = params.get("protocolVersion")
        if self.forced is None and v.__class__ is int and v in (1, 2):
            self.version = v

    def _initialize_result(self, result: dict[str, Any]) -> None:
        self._init_done = True
        self._agent_caps = _dict(result.get("agentCapabilities", result.get("capabilities")))
        v = result.get("protocolVersion")
        if self.forced is not None or v.__class__ is not int:
            return
        if v in (1, 2):
            self.version = v
        else:
            self._add(
                "acp.unknown-version",
                "agent",
                f"protocol version {v} has no bundled schema; schema checks are off",
            )
            self._no_schema = True

    # -- behaviour -------------------------------------------------------------------------

    def _session(self, sid: Any) -> _Session | None:
        return self._sessions.get(sid) if isinstance(sid, str) else None

    def _behaviour_call(
        self, frame: Frame, info: Info, method: str, params: dict[str, Any]
    ) -> None:
        d = frame.direction
        side = _sender(d)
        sid = params.get("sessionId")
        if (
            d is Direction.CLIENT_TO_AGENT
            and method in _SESSION_INTRODUCERS
            and isinstance(sid, str)
        ):
            self._sessions.setdefault(sid, _Session())
        s = self._session(sid)
        if isinstance(sid, str) and s is None and self._init_done and not method.startswith("$/"):
            self._add(
                "acp.unknown-session",
                side,
                f"{method} names session {sid}, "
                "which no session/new, load, resume, fork or list produced",
            )
        if self._init_done:
            self._capabilities(method, params, d)
        if s is None:
            return
        if d is Direction.AGENT_TO_CLIENT and method in ("session/prompt", "session/cancel"):
            return  # not a client's turn (schema.method said so)
        if method == "session/prompt" and info.kind == Kind.REQUEST:
            if self.version == 1 and s.prompt is not None:
                self._add(
                    "turn.concurrent-prompt",
                    side,
                    f"a second session/prompt on {sid} while frame {s.prompt.seq}'s is in flight",
                    [s.prompt.seq],
                )
            s.prompt = _Request(frame.seq, frame.t_ns, method, params, d)
            s.cancel = None
            s.idle_early = False
        elif method == "session/cancel" and d is Direction.CLIENT_TO_AGENT:
            if s.prompt is not None or s.turn_open is not None:
                s.cancel = _Request(frame.seq, frame.t_ns, method, params, d)
        elif method == "session/update":
            self._update(frame, s, str(sid), _dict(params.get("update")), side)
        elif method in _V1_TERMINAL and self.version == 1:
            tid = params.get("terminalId")
            if isinstance(tid, str) and tid in s.released:
                self._add(
                    "v1.terminal-after-release",
                    side,
                    f"{method} on terminal {tid}, released at frame {s.released[tid]}",
                    [s.released[tid]],
                )
            elif isinstance(tid, str) and method == "terminal/release":
                s.released[tid] = frame.seq
        elif method == "session/request_permission" and self.version == 2:
            title = params.get("title")
            if not isinstance(title, str) or not title:
                self._add(
                    "v2.permission-title",
                    side,
                    "session/request_permission needs a non-empty title in v2",
                )
        elif method == "tool_call/cancel" and self.version == 2:
            tid = params.get("toolCallId")
            if isinstance(tid, str) and tid not in s.cancellable_tools:
                self._add(
                    "v2.cancel-capability",
                    side,
                    f"tool call {tid} did not advertise capabilities.cancel",
                )
        elif method == "terminal/cancel" and self.version == 2:
            tid = params.get("terminalId")
            if isinstance(tid, str) and tid not in s.cancellable_terminals:
                self._add(
                    "v2.cancel-capability",
                    side,
                    f"terminal {tid} did not advertise capabilities.cancel",
                )

    def _capabilities(self, method: str, params: dict[str, Any], d: Direction) -> None:
        side = _sender(d)
        if d is Direction.AGENT_TO_CLIENT:
            self._client_capabilities(method, params, side)
        else:
            self._agent_capabilities(method, params, side)

    def _client_capabilities(self, method: str, params: dict[str, Any], side: str) -> None:
        """Client methods the agent calls: fs and terminal (v1), elicitation."""
        cc = self._client_caps
        if self.version == 1:
            fs = _dict(cc.get("fs"))
            need: tuple[str, bool] | None = None
            if method == "fs/read_text_file":
                need = ("clientCapabilities.fs.readTextFile", fs.get("readTextFile") is True)
            elif method == "fs/write_text_file":
                need = ("clientCapabilities.fs.writeTextFile", fs.get("writeTextFile") is True)
            elif method in _V1_TERMINAL or method == "terminal/create":
                need = ("clientCapabilities.terminal", cc.get("terminal") is True)
            if need is not None and not need[1]:
                self._add("cap.client-method", side, f"{method} without {need[0]}")
        if method == "elicitation/create":
            mode = params.get("mode")
            el = _dict(cc.get("elicitation"))
            if isinstance(mode, str) and not _marker(el.get(mode)):
                self._add(
                    "cap.client-method",
                    side,
                    f"elicitation/create in {mode} mode without elicitation.{mode}",
                )

    def _agent_capabilities(self, method: str, params: dict[str, Any], side: str) -> None:
        """Agent methods and content the client uses: session methods, prompt content
        types, MCP transports."""
        ac = self._agent_caps
        if self.version == 1:
            sc = _dict(ac.get("sessionCapabilities"))
            gate: tuple[str, bool] | None = None
            if method == "session/load":
                gate = ("agentCapabilities.loadSession", ac.get("loadSession") is True)
            elif method in ("session/list", "session/resume", "session/close", "session/delete"):
                key = method.split("/")[1]
                gate = (f"agentCapabilities.sessionCapabilities.{key}", _marker(sc.get(key)))
            elif method == "logout":
                gate = (
                    "agentCapabilities.auth.logout",
                    _marker(_dict(ac.get("auth")).get("logout")),
                )
            if gate is not None and not gate[1]:
                self._add("cap.agent-method", side, f"{method} without {gate[0]}")
            prompt_caps = _dict(ac.get("promptCapabilities"))
            mcp = _dict(ac.get("mcpCapabilities"))
            mcp_ok = {"http": _marker(mcp.get("http")), "sse": _marker(mcp.get("sse"))}
            prefix = "agentCapabilities.promptCapabilities"
            mcp_prefix = "agentCapabilities.mcpCapabilities"
        else:
            sess = _dict(ac.get("session"))
            if method == "session/delete" and not _marker(sess.get("delete")):
                self._add(
                    "cap.agent-method", side, "session/delete without capabilities.session.delete"
                )
            prompt_caps = _dict(sess.get("prompt"))
            mcp = _dict(sess.get("mcp"))
            mcp_ok = {"stdio": _marker(mcp.get("stdio")), "http": _marker(mcp.get("http"))}
            prefix = "capabilities.session.prompt"
            mcp_prefix = "capabilities.session.mcp"
        if method == "session/prompt":
            wanted = {"image": "image", "audio": "audio", "resource": "embeddedContext"}
            prompt = params.get("prompt")
            for block in prompt if isinstance(prompt, list) else ():
                t = _dict(block).get("type")
                cap = wanted.get(t) if isinstance(t, str) else None
                if cap is not None and not _marker(prompt_caps.get(cap)):
                    self._add("cap.prompt-content", side, f"a {t} block without {prefix}.{cap}")
        if method in ("session/new", "session/load", "session/resume", "session/fork"):
            servers = params.get("mcpServers")
            for server in servers if isinstance(servers, list) else ():
                t = _dict(server).get("type", "stdio")
                if isinstance(t, str) and t in mcp_ok and not mcp_ok[t]:
                    self._add(
                        "cap.mcp-transport",
                        side,
                        f"an MCP server of type {t} without {mcp_prefix}.{t}",
                    )

    def _update(
        self, frame: Frame, s: _Session, sid: str, update: dict[str, Any], side: str
    ) -> None:
        kind = update.get("sessionUpdate")
        if not isinstance(kind, str):
            return  # the schema says what is wrong with it
        if self.version == 1:
            tid = update.get("toolCallId")
            if kind == "tool_call" and isinstance(tid, str):
                s.tool_calls.add(tid)
            elif kind == "tool_call_update" and isinstance(tid, str) and tid not in s.tool_calls:
                self._add(
                    "v1.unknown-tool-call",
                    side,
                    f"tool_call_update for {tid}, which no tool_call announced",
                )
            if kind in _TURN_OUTPUT_V1 and s.prompt is None and s.turns > 0:
                self._add(
                    "turn.update-after-turn",
                    side,
                    f"{kind} for session {sid} after its prompt turn ended",
                )
            return
        if kind in _MESSAGE_UPDATES_V2:
            mid = update.get("messageId")
            if not isinstance(mid, str) or not mid:
                self._add("v2.message-id", side, f"{kind} without messageId")
        elif kind == "state_update":
            state = update.get("state")
            if state == "idle" and (s.turn_open is not None or s.prompt is not None):
                cancel = s.cancel
                if cancel is not None:
                    self._cancel_outcome(frame, cancel, update.get("stopReason"), side)
                if s.turn_open is None:
                    s.idle_early = True  # ended before the acknowledgement reached us
                s.turn_open = None
                s.cancel = None
        elif kind in ("tool_call_update", "tool_call_content_chunk"):
            tid = update.get("toolCallId")
            if isinstance(tid, str):
                if kind == "tool_call_update":
                    if tid not in s.seen_tools and not isinstance(update.get("title"), str):
                        self._add(
                            "v2.patch-first-report",
                            side,
                            f"the first update of tool call {tid} has no title",
                        )
                    self._cancel_marker(s.cancellable_tools, tid, update)
                s.seen_tools.add(tid)
        elif kind in ("terminal_update", "terminal_output_chunk"):
            tid = update.get("terminalId")
            if not isinstance(tid, str):
                return
            if kind == "terminal_output_chunk":
                if not _base64(update.get("data")):
                    self._add(
                        "v2.terminal", side, f"terminal_output_chunk data of {tid} is not base64"
                    )
            else:
                if tid not in s.seen_terminals and not isinstance(update.get("command"), str):
                    self._add(
                        "v2.patch-first-report",
                        side,
                        f"the first update of terminal {tid} has no command",
                    )
                output = update.get("output")
                if isinstance(output, dict) and not _base64(output.get("data")):
                    self._add("v2.terminal", side, f"the output snapshot of {tid} is not base64")
                cwd = update.get("cwd")
                if isinstance(cwd, str) and not cwd.startswith("/") and not _windows_abs(cwd):
                    self._add("v2.terminal", side, f"terminal {tid} cwd {cwd!r} is not absolute")
                self._cancel_marker(s.cancellable_terminals, tid, update)
            s.seen_terminals.add(tid)

    @staticmethod
    def _cancel_marker(target: set[str], tid: str, update: dict[str, Any]) -> None:
        """Patch semantics: omitted keeps, null clears, a value replaces."""
        if "capabilities" not in update:
            return
        caps = update["capabilities"]
        if isinstance(caps, dict) and "cancel" not in caps:
            return
        if isinstance(caps, dict) and isinstance(caps.get("cancel"), dict):
            target.add(tid)
        else:
            target.discard(tid)

    def _behaviour_answer(self, frame: Frame, req: _Request, result: Any, is_error: bool) -> None:
        side = _sender(frame.direction)
        method = req.method
        r = _dict(result)
        if method == "initialize" and req.direction is Direction.CLIENT_TO_AGENT:
            if not is_error:
                self._initialize_result(r)
            return
        if is_error:
            s = self._session(req.params.get("sessionId"))
            if method == "session/prompt" and s is not None:
                if s.cancel is not None:
                    self._cancel_outcome(frame, s.cancel, None, side)
                self._end_turn_v1(s)  # a refused prompt starts no turn, in either version
            return
        if method in ("session/new", "session/fork"):
            sid = r.get("sessionId")
            if isinstance(sid, str):
                self._sessions.setdefault(sid, _Session())
        elif method == "session/list":
            sessions = r.get("sessions")
            for info in sessions if isinstance(sessions, list) else ():
                sid = _dict(info).get("sessionId")
                if isinstance(sid, str):
                    self._sessions.setdefault(sid, _Session())
        elif method == "session/prompt":
            s = self._session(req.params.get("sessionId"))
            if s is None:
                return
            if self.version == 1:
                if s.cancel is not None:
                    self._cancel_outcome(frame, s.cancel, r.get("stopReason"), side)
                self._end_turn_v1(s)
            else:
                s.prompt = None
                if not s.idle_early:
                    s.turn_open = req
                s.idle_early = False
        elif method == "session/request_permission":
            outcome = _dict(r.get("outcome"))
            if outcome.get("outcome") == "selected":
                chosen = outcome.get("optionId")
                options = req.params.get("options")
                offered = (
                    [_dict(o).get("optionId") for o in options] if isinstance(options, list) else []
                )
                if chosen not in offered:
                    self._add(
                        "acp.permission-option",
                        side,
                        f"optionId {chosen!r} was not among the options offered",
                        [req.seq],
                    )
        elif method == "terminal/create" and self.version == 1:
            s = self._session(req.params.get("sessionId"))
            tid = r.get("terminalId")
            if s is not None and isinstance(tid, str):
                s.released.pop(tid, None)

    def _end_turn_v1(self, s: _Session) -> None:
        s.prompt = None
        s.cancel = None
        s.turns += 1

    def _cancel_outcome(self, frame: Frame, cancel: _Request, stop: Any, side: str) -> None:
        if stop != "cancelled":
            self._add(
                "turn.cancel-not-honoured",
                side,
                f"the turn cancelled at frame {cancel.seq} ended with stop reason "
                f"{stop!r}, not 'cancelled'",
                [cancel.seq],
            )
        waited = (frame.t_ns - cancel.t_ns) / _SEC
        if waited > self.thresholds.slow_cancel:
            self._add(
                "timing.slow-cancel",
                side,
                f"the cancel at frame {cancel.seq} took {waited:.1f} s",
                [cancel.seq],
            )


def _numbers(value: Any) -> Any:
    """``value`` with every number the tolerant parser kept as text (a ``str`` subclass)
    made a number again, so the validator sees the JSON value the peer sent."""
    if isinstance(value, dict):
        return {k: _numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_numbers(v) for v in value]
    if isinstance(value, str) and value.__class__ is not str:
        try:
            return int(value)
        except ValueError:
            return float(value)
    return value


def _joins(broken: list[tuple[int, bytes]], i: int) -> int:
    """How many lines from ``broken[i]`` on join, with newlines, into one JSON message
    (0: none do). Lines must be consecutive frames."""
    parts = [broken[i][1]]
    if parts[0].lstrip(b" \t\r\xef\xbb\xbf")[:1] not in (b"{", b"["):
        return 0  # a message starts with a brace: this is text (a log line, say)
    size = len(parts[0])
    for j in range(i + 1, min(len(broken), i + 64)):
        if broken[j][0] != broken[j - 1][0] + 1 and broken[j][0] <= broken[j - 1][0]:
            break
        parts.append(broken[j][1])
        size += len(broken[j][1])
        if size > 8 * 1024 * 1024:
            break
        text = b"\n".join(parts)
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            continue
        return len(parts) if isinstance(value, dict | list) else 0
    return 0


def _trailing(raw: bytes) -> bool:
    """Does a JSON object or array start the line, with bytes after it?"""
    text = raw.decode("utf-8", "replace").lstrip("\ufeff \t")
    if text[:1] not in ("{", "["):
        return False
    try:
        _, end = json.JSONDecoder().raw_decode(text)
    except (ValueError, RecursionError):
        return False
    return bool(text[end:].strip())


def _base64(v: Any) -> bool:
    if not isinstance(v, str):
        return False
    try:
        base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _windows_abs(path: str) -> bool:
    return len(path) > 2 and path[1] == ":" and path[2] in "\\/"


def check_frames(frames: Iterable[tuple[Frame, Sequence[str]]], **options: Any) -> list[Finding]:
    """Every finding of one capture, in order."""
    checker = Checker(**options)
    for frame, flags in frames:
        checker.feed(frame, flags)
    checker.finish()
    return checker.findings

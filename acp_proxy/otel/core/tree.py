"""Where each span of a trace goes, and the small helpers every span uses (pure, no I/O).

What belongs here: :class:`Trace` (one per ACP session the client opened: its trace id,
root span and the turns in it; a child session the agent announced shares its parent's
trace, its root being its own ``invoke_agent`` span) and :class:`SpanTree`, which knows
before any span is made the span id, group and group end of every turn and tool call,
finds the trace, parent and group of anything seen at a sequence number, and makes spans
with their ids; and the helpers that put values into attributes (bounded by
:func:`~acp_proxy.otel.core.model.attr`) and mark a span failed. The attributes of each kind of
span are :mod:`acp_proxy.otel.core.mapping`'s.
"""

from __future__ import annotations

import bisect
import contextlib
from dataclasses import dataclass, field
from typing import Any

import orjson

from acp_proxy.otel.core.fold import CaptureInfo, TraceFold
from acp_proxy.otel.core.model import AttrValue, SpanData, SpanEvent, attr, span_id, trace_id
from acp_proxy.reconstruct.session import Turn

__all__ = [
    "SpanTree",
    "Trace",
    "json_text",
    "mark_error",
    "peer_info",
    "put",
    "reader_id",
    "short_name",
]

_NAME_MAX = 96


def short_name(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _NAME_MAX else text[: _NAME_MAX - 1] + "…"


def put(attrs: dict[str, AttrValue], key: str, value: Any, limit: int | None = None) -> None:
    v = attr(value) if limit is None else attr(value, limit)
    if v is not None:
        attrs[key] = v


def json_text(value: Any) -> str:
    return orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS).decode(
        "utf-8", "replace"
    )


def reader_id(token: str | None) -> str | None:
    """The id as a reader writes it: a string id without its quotes, a number as is."""
    if token is None:
        return None
    if token.startswith('"'):
        with contextlib.suppress(orjson.JSONDecodeError):
            value = orjson.loads(token)
            if isinstance(value, str):
                return value
    return token


def peer_info(value: Any) -> tuple[Any, Any]:
    if isinstance(value, dict):
        return value.get("name"), value.get("version")
    return None, None


def mark_error(span: SpanData, error: Any, t_ns: int) -> None:
    e = error if isinstance(error, dict) else {"message": error}
    code, message = e.get("code"), e.get("message")
    span.status = "error"
    span.status_message = attr(message) if isinstance(message, str) else f"error {code}"  # type: ignore[assignment]
    put(span.attributes, "rpc.jsonrpc.error_code", code)
    put(span.attributes, "rpc.jsonrpc.error_message", message)
    ev: dict[str, AttrValue] = {"exception.type": f"jsonrpc.error.{attr(code)}"}
    put(ev, "exception.message", message)
    span.events.append(SpanEvent("exception", t_ns, ev))


@dataclass(slots=True)
class Trace:
    """One ACP session's trace: its ids and its turns in order."""

    session_id: str
    trace_id: bytes
    root_id: bytes
    root_parent: bytes | None
    trace_state: str | None
    turns: list[Turn] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)  # each turn's seq, ascending
    tool_turn: dict[str, Turn] = field(default_factory=dict)
    parent: Trace | None = None  # a child session's: its parent's trace


class SpanTree:
    """The traces of a fold and the place of every turn and tool call in them; subclasses
    make the spans (see :mod:`acp_proxy.otel.core.mapping`)."""

    def __init__(
        self,
        info: CaptureInfo,
        r: TraceFold,
        content: bool,
        only: set[str] | None,
        latest: bool = False,
    ) -> None:
        self.info = info
        self.r = r
        self.content = content
        self.latest = latest  # the latest experimental GenAI conventions (opted in)
        self.only = only
        self.out: list[SpanData] = []
        self.end_rel = info.ended_ns if info.ended_ns is not None else r.last_t_ns
        name, version = peer_info(r.agent_info)
        self.agent_name = attr(name) if isinstance(name, str) else None
        self.agent_version = version
        self.traces: dict[str, Trace] = {}
        # span id, group and group end of every turn; span id, group, parent, group end of
        # every tool call: known before any span is made, so only the spans asked for are
        self.turn_info: dict[int, tuple[bytes, str, int]] = {}
        self.tool_info: dict[tuple[str, str], tuple[bytes, str, bytes, int]] = {}
        self.calls_by_seq = {c.seq: c for c in r.calls}

    def want(self, group: str) -> bool:
        return self.only is None or group in self.only

    def unix(self, t_ns: int) -> int:
        return self.info.started_unix_ns + t_ns

    def trace(self, sid: str) -> Trace:
        t = self.traces.get(sid)
        if t is not None:
            return t
        sub = self.r.subagents.get(sid)
        if sub is not None:
            self.traces[sid] = Trace(sid, b"", b"", None, None)  # a cycle of parents ends here
            up = self.trace(sub.parent_id)
            del self.traces[sid]
            if up.trace_id:
                own = span_id(self.info.uid, sid, "subagent")
                root = up.root_id if sub.replayed else own  # history is no new execution
                t = Trace(sid, up.trace_id, root, None, up.trace_state, parent=up)
                self.traces[sid] = t
                return t
        ctx = self.r.contexts.get(sid) or self.r.connection_context
        tid = ctx.trace_id if ctx is not None else trace_id(self.info.uid, sid)
        t = Trace(
            sid,
            tid,
            span_id(self.info.uid, sid, "root"),
            ctx.parent_id if ctx is not None else None,
            ctx.trace_state if ctx is not None else None,
        )
        self.traces[sid] = t
        return t

    def span(
        self, t: Trace, key: str, name: str, parent: bytes | None, start: int, end: int
    ) -> SpanData:
        s = SpanData(
            name=short_name(name),
            trace_id=t.trace_id,
            span_id=span_id(self.info.uid, t.session_id, key),
            parent_id=parent,
            start_ns=self.unix(start),
            end_ns=self.unix(max(start, end)),
            trace_state=t.trace_state,
        )
        if t.session_id:
            s.attributes["gen_ai.conversation.id"] = attr(t.session_id)  # type: ignore[assignment]
            s.attributes["session.id"] = attr(t.session_id)  # type: ignore[assignment]
        self.out.append(s)
        return s

    def owner(self, sid: str, seq: int) -> tuple[Trace, bytes, str, int]:
        """The trace, parent span, group and group end of something seen at ``seq``."""
        t = self.trace(sid)
        i = bisect.bisect_right(t.starts, seq) - 1
        if i >= 0:
            turn = t.turns[i]
            if turn.ended_seq is None or seq <= turn.ended_seq:
                return (t, *self.turn_info[turn.seq])
        return t, t.root_id, "end", self.end_rel

"""What a trace needs of a capture, folded from its frames (pure, no I/O).

What belongs here: :class:`CaptureInfo` (a capture's wall clock, transport, agent and end)
and :class:`TraceFold`, the reconstruction (:mod:`acp_proxy.reconstruct`: turns, tool
calls, permissions, terminals, v1 and v2 rules) plus what a trace needs that the views do
not keep — every request with its answer (for fs, terminal and other JSON-RPC spans and
their errors), token usage reported with the end of a turn, and W3C trace context found in
``_meta``. The spans made of them are :mod:`acp_proxy.otel.core.mapping`'s.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from acp_proxy.otel.core.model import parse_traceparent
from acp_proxy.protocol.frames import Direction, Frame
from acp_proxy.reconstruct.fold import Reconstruction
from acp_proxy.reconstruct.wire import RpcMessage

__all__ = ["Call", "CaptureInfo", "TraceContext", "TraceFold", "capture_info"]

_C2A = Direction.CLIENT_TO_AGENT
_SETUP = ("session/new", "session/fork", "session/load", "session/resume")


@dataclass(slots=True)
class CaptureInfo:
    """What a trace needs of a capture besides its frames. ``started_unix_ns`` is the wall
    clock of ``t_ns = 0``; ``ended_ns`` is relative like ``t_ns`` (``None``: not ended)."""

    uid: str
    started_unix_ns: int
    transport: str | None = None
    agent_command: list[str] | None = None
    proxy_version: str | None = None
    ended_ns: int | None = None


def _unix_ns(iso: Any) -> int:
    if isinstance(iso, str):
        with contextlib.suppress(ValueError):
            return int(datetime.fromisoformat(iso).timestamp() * 1e6) * 1000
    return 0


def capture_info(row: dict[str, Any]) -> CaptureInfo:
    """From a ``captures`` row (or the recorder's capture metadata)."""
    command = row.get("agent_command")
    if isinstance(command, str):
        with contextlib.suppress(orjson.JSONDecodeError):
            command = orjson.loads(command)
    argv = [str(a) for a in command] if isinstance(command, list) else None
    ended = row.get("ended_ns")
    return CaptureInfo(
        uid=str(row.get("uid") or ""),
        started_unix_ns=_unix_ns(row.get("started_at")),
        transport=row.get("transport") if isinstance(row.get("transport"), str) else None,
        agent_command=argv,
        proxy_version=row.get("proxy_version")
        if isinstance(row.get("proxy_version"), str)
        else None,
        ended_ns=ended if isinstance(ended, int) else None,
    )


@dataclass(slots=True)
class Call:
    """One JSON-RPC request and its answer, with the few fields spans show."""

    seq: int
    t_ns: int
    direction: Direction
    method: str
    id: str | None
    session_id: str | None
    path: str | None = None
    size: int | None = None
    terminal_id: str | None = None
    end_seq: int | None = None
    end_t_ns: int | None = None
    error: dict[str, Any] | None = None


@dataclass(slots=True)
class TraceContext:
    trace_id: bytes
    parent_id: bytes
    trace_state: str | None


def _context(params: dict[str, Any]) -> TraceContext | None:
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        return None
    parsed = parse_traceparent(meta.get("traceparent"))
    if parsed is None:
        return None
    state = meta.get("tracestate")
    return TraceContext(parsed[0], parsed[1], state[:512] if isinstance(state, str) else None)


def _len(text: Any) -> int | None:
    return len(text.encode("utf-8", "surrogatepass")) if isinstance(text, str) else None


class TraceFold(Reconstruction):
    """The reconstruction, plus requests with their answers, usage reported at the end of
    a turn, and the trace context the client sent."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[Call] = []
        self._calls: dict[tuple[int, str | None], Call] = {}
        self.usage_at: dict[int, dict[str, Any]] = {}
        self.connection_context: TraceContext | None = None
        self.contexts: dict[str, TraceContext] = {}
        self.turn_contexts: dict[int, TraceContext] = {}
        self._setup_contexts: dict[tuple[int, str | None], TraceContext] = {}
        self.last_t_ns = 0
        self.last_seen: dict[str, int] = {}  # session -> t_ns of its latest update

    def feed(self, frame: Frame) -> None:
        self.last_t_ns = max(self.last_t_ns, frame.t_ns)
        super().feed(frame)

    def _request(self, m: RpcMessage) -> None:
        super()._request(m)
        method = m.method or ""
        p = m.params
        if method == "session/update":
            if isinstance(p.get("sessionId"), str):
                self.last_seen[p["sessionId"]] = m.t_ns
            u = p.get("update")
            if isinstance(u, dict) and isinstance(u.get("usage"), dict):
                self.usage_at[m.seq] = u["usage"]
            return
        ctx = _context(p) if m.direction is _C2A else None
        sid = p.get("sessionId") if isinstance(p.get("sessionId"), str) else None
        if ctx is not None:
            if method == "initialize" and self.connection_context is None:
                self.connection_context = ctx
            elif method in ("session/new", "session/fork"):
                self._setup_contexts[(m.seq, m.id)] = ctx
            elif method == "session/prompt":
                self.turn_contexts[m.seq] = ctx
                first = not any(t.session_id == sid for t in self.turns[:-1])
                if sid is not None and first:
                    self.contexts.setdefault(sid, ctx)
            elif method in _SETUP and sid is not None:
                self.contexts.setdefault(sid, ctx)
        if m.kind != "request":
            return
        call = Call(m.seq, m.t_ns, m.direction, method, m.id, m.session_id)
        if method.startswith("fs/"):
            path = p.get("path")
            call.path = path if isinstance(path, str) else None
            call.size = _len(p.get("content"))
        tid = p.get("terminalId")
        call.terminal_id = tid if isinstance(tid, str) else None
        self.calls.append(call)
        self._calls[(m.seq, m.id)] = call

    def _response(self, m: RpcMessage) -> None:
        super()._response(m)
        req = m.request
        if req is None:
            return
        call = self._calls.pop((req.seq, req.id), None)
        r = m.result if isinstance(m.result, dict) else {}
        ctx = self._setup_contexts.pop((req.seq, req.id), None)
        if ctx is not None and isinstance(r.get("sessionId"), str):
            self.contexts.setdefault(r["sessionId"], ctx)
        if req.method == "session/prompt" and isinstance(r.get("usage"), dict):
            self.usage_at[m.seq] = r["usage"]
        if call is None:
            return
        call.end_seq, call.end_t_ns = m.seq, m.t_ns
        if m.kind == "error":
            e = m.body.get("error")
            call.error = e if isinstance(e, dict) else {"message": str(e)}
        elif call.method == "fs/read_text_file":
            call.size = _len(r.get("content"))
        elif call.method == "terminal/create" and isinstance(r.get("terminalId"), str):
            call.terminal_id = r["terminalId"]
        if call.session_id is None and isinstance(r.get("sessionId"), str):
            call.session_id = r["sessionId"]

"""Readable text for people: timelines.

What belongs here: turning stored frames, events and stderr into short timeline lines —
time, direction arrow, kind, method or update kind, a summary (from
:mod:`acp_proxy.text.summary`), and request↔response latency — and choosing which frames a
listing shows. The raw bytes stay authoritative; a summary never hides that a frame is odd
(anomalies are shown). Captures themselves are described in :mod:`acp_proxy.text.captures`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from typing import Any

import orjson

from acp_proxy import sgr
from acp_proxy.events import describe, is_bad
from acp_proxy.protocol.jsonrpc import decode
from acp_proxy.store.reader import StoredFrame
from acp_proxy.text.style import Styled, plain
from acp_proxy.text.summary import summary

__all__ = [
    "KIND_WIDTH",
    "Expression",
    "FrameFilter",
    "Grep",
    "event_detail",
    "event_line",
    "event_parts",
    "frame_line",
    "frame_parts",
    "seq_width",
    "stderr_parts",
]

KIND_WIDTH = 12  # "notification", the longest kind

_WIDTH = 72


@dataclass(frozen=True, slots=True)
class FrameFilter:
    """Which frames a listing shows; every criterion given must hold."""

    method: str | None = None
    kind: str | None = None
    session: str | None = None
    direction: str | None = None
    update: str | None = None
    anomalous: bool = False
    expression: Expression | None = None  # --filter

    @classmethod
    def of(cls, options: dict[str, Any]) -> FrameFilter:
        """The filter of a listing's options (``--method`` … and ``--filter``)."""
        given = {k: v for k, v in options.items() if k != "filter"}
        src = options.get("filter")
        return cls(**given, expression=Expression(src) if src else None)

    @property
    def active(self) -> bool:
        """Whether any criterion was given (a listing then leaves stderr out by default)."""
        plain = (self.method, self.kind, self.session, self.direction, self.update)
        return any(v is not None for v in plain) or self.anomalous or self.expression is not None

    def __call__(self, f: StoredFrame) -> bool:
        if self.expression is not None and not self.expression(f):
            return False
        if self.method is not None and not fnmatchcase(f.method or "", self.method):
            return False
        if self.kind is not None and f.kind != self.kind:
            return False
        if self.session is not None and f.session_id != self.session:
            return False
        if self.direction is not None and f.direction.value != self.direction:
            return False
        if self.update is not None and not fnmatchcase(f.update_kind or "", self.update):
            return False
        return not (self.anomalous and not f.anomalies)


class Expression:
    """``--filter EXPR``: a frame filter expression (:mod:`acp_proxy.filters`) decided on
    stored frames; :attr:`where` is its SQL first cut for a query of ``messages``."""

    def __init__(self, src: str) -> None:
        from acp_proxy.filters import compile_filter, parse, sql_where

        self.src = src
        tree = parse(src)
        self.test = compile_filter(tree)
        self.where, self.args, self.exact = sql_where(tree)

    def __call__(self, f: StoredFrame) -> bool:
        return self.test(frame_fields(f))


def frame_fields(f: StoredFrame) -> dict[str, Any]:
    """A stored frame's fields by the names a filter expression reads
    (:data:`acp_proxy.filters.FIELDS`)."""
    return {
        "method": f.method,
        "direction": f.direction.value,
        "kind": f.kind,
        "session_id": f.session_id,
        "update_kind": f.update_kind,
        "msg_id": f.msg_id,
        "tool_call_id": f.tool_call_id,
        "terminal_id": f.terminal_id,
        "error_code": f.error_code,
        "anomalies": f.anomalies,
        "raw": f.raw,
    }


class Grep:
    """``--grep PATTERN``: a regular expression searched in a frame's exact text (and in
    stderr lines); case-insensitive unless the pattern has a capital letter."""

    def __init__(self, pattern: str, ignore_case: bool = False) -> None:
        import re

        smart = not any(c.isupper() for c in pattern)
        flags = re.IGNORECASE if ignore_case or smart else 0
        try:
            self.rx = re.compile(pattern, flags)
        except re.error as e:
            from acp_proxy.errors import UsageError

            raise UsageError(f"--grep {pattern!r} is not a regular expression: {e}") from e

    def text(self, text: str) -> bool:
        return self.rx.search(text) is not None

    def raw(self, raw: bytes) -> bool:
        """Whether a frame's exact bytes match (read as UTF-8, an invalid byte as U+FFFD)."""
        return self.rx.search(raw.decode("utf-8", "replace")) is not None

    def __call__(self, f: StoredFrame) -> bool:
        return self.raw(f.raw)


def seq_width(last_seq: int) -> int:
    """The width of the seq column, for a capture whose last frame is ``last_seq``."""
    return max(5, len(str(max(last_seq, 0))))


def _when(t_ns: int, started_at: str | None) -> str:
    return _wall(started_at, t_ns) if started_at else f"{t_ns / 1e6:>10.3f}ms"


def event_parts(ev: dict[str, Any], width: int = 5, started_at: str | None = None) -> Styled:
    """A lifecycle or connection event, in the timeline between frames: its readable line
    (:func:`acp_proxy.events.describe`)."""
    kind = str(ev.get("kind") or "event")
    style = "error" if is_bad(kind) else "event"
    head = f"{_when(ev['t_ns'], started_at)}{' ' * (width + 3)}· "
    line = describe(kind, event_detail(ev))
    return Styled.of(head, (f"{kind:<{KIND_WIDTH}}", style), " ", (line, style))


def event_detail(ev: dict[str, Any]) -> dict[str, Any]:
    """An event's ``detail`` as a mapping, whether stored as JSON text or already parsed."""
    d = ev.get("detail")
    if isinstance(d, str | bytes):
        try:
            d = orjson.loads(d)
        except orjson.JSONDecodeError:
            return {}
    return d if isinstance(d, dict) else {}


def event_line(ev: dict[str, Any], width: int = 5, started_at: str | None = None) -> str:
    return plain(event_parts(ev, width, started_at))


def stderr_parts(
    t_ns: int, data: bytes, width: int = 5, started_at: str | None = None
) -> list[Styled]:
    """What the agent wrote on stderr at ``t_ns``, one timeline line per line written."""
    text = data.decode("utf-8", "replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    head = f"{_when(t_ns, started_at)}{' ' * (width + 3)}· "
    return [
        Styled.of(head, (f"{'stderr':<{KIND_WIDTH}}", "stderr"), " ", *sgr.parts(line, "stderr"))
        for line in lines
    ]


def _frame_style(f: StoredFrame) -> str | None:
    if f.kind == "error":
        return "error"
    if f.update_kind in ("tool_call", "tool_call_update") or f.kind == "response":
        v = decode(f.raw)
        if isinstance(v, dict):
            if f.update_kind:
                p = v.get("params")
                u = p.get("update") if isinstance(p, dict) else None
                if isinstance(u, dict) and u.get("status") == "failed":
                    return "error"
            else:
                r = v.get("result")
                o = r.get("outcome") if isinstance(r, dict) else None
                if isinstance(o, dict) and (
                    o.get("outcome") == "cancelled"
                    or any(w in str(o.get("optionId", "")).lower() for w in _DENY)
                ):
                    return "denied"
    return None


_DENY = ("reject", "deny", "decline", "disallow")


def frame_parts(f: StoredFrame, started_at: str | None = None, width: int = 5) -> Styled:
    """A frame as one timeline line, in parts coloured by what they are."""
    d = f.direction.value
    label = f.update_kind if f.update_kind else (f.method or "")
    ident = f" [{f.msg_id}]" if f.msg_id is not None else ""
    if f.opcode_text == "binary":
        ident += " (binary)"
    text = summary(f)
    style = _frame_style(f)
    extra = ""
    if f.latency_ns is not None:
        extra = f"  ({f.latency_ns / 1e6:.2f} ms, #{f.request_seq})"
    kind = f"{f.kind:<{KIND_WIDTH}}"
    parts: list[tuple[str, str | None]] = [
        (f"{_when(f.frame.t_ns, started_at)} #{f.seq:<{width}} ", None),
        (f.direction.arrow, d),
        (" ", None),
        (kind, "error" if f.kind == "error" else d if f.kind == "request" else None),
        (f" {label}{ident}".rstrip(), "error" if style == "error" else None),
    ]
    if not label and not ident:
        parts[3] = (kind.rstrip() if not text else kind, parts[3][1])
    if text:
        parts.append(("  " + text, style))
    if extra:
        parts.append((extra, "dim"))
    if f.anomalies:
        parts.append((f"  !{','.join(f.anomalies)}", "anomaly"))
    return Styled(tuple(parts))


def frame_line(f: StoredFrame, started_at: str | None = None, width: int = 5) -> str:
    return plain(frame_parts(f, started_at, width)).rstrip()


def _wall(started_at: str, t_ns: int) -> str:
    try:
        base = datetime.fromisoformat(started_at.replace("Z", "+00:00"))
    except ValueError:
        return f"{t_ns / 1e6:>10.3f}ms"
    ts = base.timestamp() + t_ns / 1e9  # in UTC, as the header says: never local time
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%H:%M:%S.%f")[:-3]

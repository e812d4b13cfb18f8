"""Span descriptions, their ids and bounded attribute values (pure, no I/O).

What belongs here: :class:`SpanData` (what one span is: name, ids, parent, times, kind,
attributes, events, links, status), the deterministic ids derived from a capture's uid and
an ACP session id, the rule that makes any peer value a safe, bounded attribute value
(:func:`attr`), W3C ``traceparent`` parsing, and the resource attributes with the standard
``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES`` variables applied. The SDK and OTLP/JSON
adapters read these values; nothing here imports OpenTelemetry.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

__all__ = [
    "LATEST_OPT_IN",
    "MAX_ARRAY",
    "MAX_CONTENT",
    "MAX_VALUE",
    "AttrValue",
    "SpanData",
    "SpanEvent",
    "SpanLink",
    "attr",
    "latest_semconv",
    "parse_traceparent",
    "resource_attributes",
    "span_id",
    "trace_id",
]

AttrValue = str | bool | int | float | list[str]

MAX_VALUE = 1024
"""Characters kept of a string attribute (longer values are cut and end with ``…``)."""
MAX_CONTENT = 16384
"""Characters kept of a message content attribute (``--otel-content``)."""
MAX_ARRAY = 64
"""Items kept of an array attribute."""
_INT64 = 1 << 63


@dataclass(slots=True)
class SpanEvent:
    name: str
    t_ns: int  # Unix epoch nanoseconds
    attributes: dict[str, AttrValue] = field(default_factory=dict)


@dataclass(slots=True)
class SpanLink:
    trace_id: bytes
    span_id: bytes
    trace_state: str | None = None
    attributes: dict[str, AttrValue] = field(default_factory=dict)


@dataclass(slots=True)
class SpanData:
    """One span. Times are Unix epoch nanoseconds; ``kind`` is ``internal``, ``server`` or
    ``client``; ``status`` is ``unset``, ``ok`` or ``error`` with ``status_message``.

    ``group`` says when live export may send it: ``turn:<seq>`` once that turn has ended,
    ``end`` when the capture ends."""

    name: str
    trace_id: bytes
    span_id: bytes
    parent_id: bytes | None
    start_ns: int
    end_ns: int
    kind: str = "internal"
    attributes: dict[str, AttrValue] = field(default_factory=dict)
    events: list[SpanEvent] = field(default_factory=list)
    links: list[SpanLink] = field(default_factory=list)
    status: str = "unset"
    status_message: str = ""
    trace_state: str | None = None
    group: str = "end"


def _digest(n: int, parts: tuple[str, ...]) -> bytes:
    text = "\0".join(("acp-proxy", *parts))
    h = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:n]
    return h if any(h) else b"\x01" + h[1:]  # an all-zero id is invalid


def trace_id(capture_uid: str, session_id: str) -> bytes:
    """The trace of one ACP session of one capture: the same every time it is mapped."""
    return _digest(16, ("trace", capture_uid, session_id))


def span_id(capture_uid: str, session_id: str, key: str) -> bytes:
    """A span of that trace, named by what it stands for (``turn:<seq>``, ``tool:<id>``…)."""
    return _digest(8, ("span", capture_uid, session_id, key))


def _text(s: str, limit: int) -> str:
    s = s.encode("utf-8", "replace").decode("utf-8")  # lone surrogates cannot be encoded
    return s if len(s) <= limit else s[: limit - 1] + "…"


def attr(value: Any, limit: int = MAX_VALUE) -> AttrValue | None:
    """A peer value as an attribute value, or ``None`` when it cannot be one.

    Strings are cut to ``limit`` characters (lone surrogates replaced); integers outside
    64 bits and non-finite floats become strings; a list becomes a list of at most
    :data:`MAX_ARRAY` strings. Anything else (objects, ``null``) is ``None``."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if -_INT64 <= value < _INT64 else _text(str(value), limit)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return _text(value, limit)
    if isinstance(value, list):
        out = []
        for item in value[:MAX_ARRAY]:
            v = attr(item, limit)
            if v is not None and not isinstance(v, list):
                out.append(v if isinstance(v, str) else str(v))
        return out
    return None


_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")


def parse_traceparent(value: Any) -> tuple[bytes, bytes] | None:
    """``(trace id, parent span id)`` of a W3C ``traceparent`` header value, if valid."""
    if not isinstance(value, str):
        return None
    m = _TRACEPARENT.match(value.strip())
    if m is None or m.group(1) == "ff":
        return None
    tid, sid = bytes.fromhex(m.group(2)), bytes.fromhex(m.group(3))
    if not any(tid) or not any(sid):
        return None
    return tid, sid


LATEST_OPT_IN = "gen_ai_latest_experimental"
"""The ``OTEL_SEMCONV_STABILITY_OPT_IN`` value that asks for the latest GenAI conventions."""


def latest_semconv(env: Mapping[str, str]) -> bool:
    """Whether ``OTEL_SEMCONV_STABILITY_OPT_IN`` (a comma-separated list) asks for the
    latest experimental GenAI semantic conventions."""
    wanted = env.get("OTEL_SEMCONV_STABILITY_OPT_IN", "").split(",")
    return LATEST_OPT_IN in (w.strip() for w in wanted)


def resource_attributes(
    base: Mapping[str, AttrValue], env: Mapping[str, str]
) -> dict[str, AttrValue]:
    """``base`` with ``OTEL_RESOURCE_ATTRIBUTES`` (``k=v,k2=v2``, percent-encoded) over it
    and ``OTEL_SERVICE_NAME`` over that; ``service.name`` defaults to ``acp-proxy``."""
    out: dict[str, AttrValue] = {"service.name": "acp-proxy", **base}
    for item in env.get("OTEL_RESOURCE_ATTRIBUTES", "").split(","):
        key, sep, value = item.partition("=")
        if sep and key.strip():
            out[unquote(key.strip())] = unquote(value.strip())
    name = env.get("OTEL_SERVICE_NAME", "").strip()
    if name:
        out["service.name"] = name
    return out

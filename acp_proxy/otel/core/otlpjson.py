"""Span descriptions as OTLP/JSON, the Collector's file format (pure, no I/O).

What belongs here: :func:`encode`, one ``ExportTraceServiceRequest`` in the OTLP JSON
encoding (ids as lowercase hex, 64-bit integers as decimal strings, enums as numbers, keys
in lowerCamelCase), which the Collector's ``otlpjsonfile`` receiver reads one per line and
an OTLP/HTTP endpoint accepts with ``Content-Type: application/json``. No OpenTelemetry
package is needed for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from acp_proxy.otel.core.model import AttrValue, SpanData

__all__ = ["KIND", "SCOPE", "STATUS", "encode"]

KIND = {"internal": 1, "server": 2, "client": 3}
STATUS = {"unset": 0, "ok": 1, "error": 2}
SCOPE = "acp-proxy"


def _value(v: AttrValue) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [_value(x) for x in v]}}
    return {"stringValue": v}


def _attributes(attrs: Mapping[str, AttrValue]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _value(v)} for k, v in attrs.items()]


def _span(s: SpanData) -> dict[str, Any]:
    out: dict[str, Any] = {
        "traceId": s.trace_id.hex(),
        "spanId": s.span_id.hex(),
    }
    if s.trace_state:
        out["traceState"] = s.trace_state
    if s.parent_id is not None:
        out["parentSpanId"] = s.parent_id.hex()
    out.update(
        name=s.name,
        kind=KIND[s.kind],
        startTimeUnixNano=str(s.start_ns),
        endTimeUnixNano=str(s.end_ns),
        attributes=_attributes(s.attributes),
        events=[
            {"timeUnixNano": str(e.t_ns), "name": e.name, "attributes": _attributes(e.attributes)}
            for e in s.events
        ],
        links=[
            {
                "traceId": link.trace_id.hex(),
                "spanId": link.span_id.hex(),
                **({"traceState": link.trace_state} if link.trace_state else {}),
                "attributes": _attributes(link.attributes),
            }
            for link in s.links
        ],
        status={
            "code": STATUS[s.status],
            **({"message": s.status_message} if s.status_message else {}),
        },
    )
    return out


def encode(
    spans: Sequence[SpanData], resource: Mapping[str, AttrValue], *, version: str
) -> dict[str, Any]:
    """One ``ExportTraceServiceRequest``: one resource, one scope, every span."""
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _attributes(resource)},
                "scopeSpans": [
                    {
                        "scope": {"name": SCOPE, "version": version},
                        "spans": [_span(s) for s in spans],
                    }
                ],
            }
        ]
    }

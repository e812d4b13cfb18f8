"""A recorded capture as spans and its resource: what ``export --format otlp``
and ``otel push`` send.

What belongs here: folding a stored capture (a database row and its frames, or a ``jsonl``
export) with :class:`~acp_proxy.otel.core.fold.TraceFold` and mapping it, with the resource
built from the capture and the standard ``OTEL_SERVICE_NAME``/``OTEL_RESOURCE_ATTRIBUTES``.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable, Mapping
from typing import Any

from acp_proxy import __version__
from acp_proxy.otel.core.fold import CaptureInfo, TraceFold, capture_info
from acp_proxy.otel.core.mapping import resource, spans
from acp_proxy.otel.core.model import AttrValue, SpanData, latest_semconv
from acp_proxy.protocol.frames import Frame

__all__ = ["Traced", "trace_capture"]

Traced = tuple[list[SpanData], dict[str, AttrValue]]


def trace_capture(
    row: Mapping[str, Any] | CaptureInfo,
    frames: Iterable[Frame],
    *,
    content: bool = False,
    env: Mapping[str, str] | None = None,
) -> Traced:
    """The spans of a capture (a ``captures`` row, or what is known of a file) and their
    resource."""
    fold = TraceFold()
    for frame in frames:
        fold.feed(frame)
    info = row if isinstance(row, CaptureInfo) else capture_info(dict(row))
    environ = dict(env if env is not None else os.environ)
    res = resource(info, environ, host=socket.gethostname(), version=__version__)
    return spans(info, fold, content=content, latest=latest_semconv(environ)), res

"""The official OpenTelemetry SDK as the way out: spans to an OTLP/HTTP endpoint.

What belongs here: :func:`require` (the one check that the ``acp-proxy[otel]`` extra is
installed), turning :class:`~acp_proxy.otel.core.model.SpanData` into the SDK's
``ReadableSpan`` with our own deterministic ids, and :class:`Sender`: a bounded queue in
front of the SDK's ``OTLPSpanExporter``, drained by one thread. A slow or dead collector
fills the queue; what does not fit is dropped and counted, never waited for. The exporter
reads the standard ``OTEL_EXPORTER_OTLP_*`` variables itself (headers, timeout,
compression, certificates; the endpoint unless one is given).
"""

from __future__ import annotations

import collections
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from acp_proxy.errors import UsageError
from acp_proxy.otel.core.model import AttrValue, SpanData

__all__ = ["EXTRA_MISSING", "Sender", "require", "traces_endpoint"]

EXTRA_MISSING = (
    "OpenTelemetry export needs the otel extra: pip install 'acp-proxy[otel]' "
    "(opentelemetry-sdk and opentelemetry-exporter-otlp-proto-http)"
)
QUEUE_SPANS = 4096
_Item = tuple[SpanData, Mapping[str, AttrValue], str]
BATCH_SPANS = 512


def require() -> None:
    """Raise :class:`UsageError` (one line, exit 2) when the extra is not installed."""
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError as e:
        raise UsageError(EXTRA_MISSING) from e


def traces_endpoint(url: str | None) -> str | None:
    """A base URL (``http://host:4318``) gets the traces path; a full one is kept.
    ``None``: let the exporter read ``OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT``."""
    if not url:
        return None
    url = url.strip()
    return url if url.rstrip("/").endswith("/v1/traces") else url.rstrip("/") + "/v1/traces"


def _quiet() -> None:
    """The SDK logs export failures; whose stderr we share is an editor's, so we count
    and report them ourselves instead."""
    log = logging.getLogger("opentelemetry")
    log.addHandler(logging.NullHandler())
    log.propagate = False
    log.setLevel(logging.CRITICAL + 1)


def readable(
    spans: Sequence[SpanData], resource: Mapping[str, AttrValue], version: str
) -> list[Any]:
    from opentelemetry import trace as api
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

    res = Resource(dict(resource))
    scope = InstrumentationScope("acp-proxy", version)
    kinds = {
        "internal": api.SpanKind.INTERNAL,
        "server": api.SpanKind.SERVER,
        "client": api.SpanKind.CLIENT,
    }
    codes = {
        "unset": api.StatusCode.UNSET,
        "ok": api.StatusCode.OK,
        "error": api.StatusCode.ERROR,
    }
    flags = api.TraceFlags(api.TraceFlags.SAMPLED)

    def ctx(tid: bytes, sid: bytes, state: str | None, remote: bool) -> api.SpanContext:
        ts = api.TraceState.from_header([state]) if state else None
        return api.SpanContext(
            int.from_bytes(tid, "big"), int.from_bytes(sid, "big"), remote, flags, ts
        )

    out = []
    for s in spans:
        out.append(
            ReadableSpan(
                name=s.name,
                context=ctx(s.trace_id, s.span_id, s.trace_state, False),
                parent=ctx(s.trace_id, s.parent_id, s.trace_state, False)
                if s.parent_id is not None
                else None,
                resource=res,
                attributes=dict(s.attributes),
                events=[Event(e.name, dict(e.attributes), e.t_ns) for e in s.events],
                links=[
                    api.Link(ctx(k.trace_id, k.span_id, k.trace_state, True), dict(k.attributes))
                    for k in s.links
                ],
                kind=kinds[s.kind],
                status=api.Status(codes[s.status], s.status_message or None)
                if s.status == "error"
                else api.Status(codes[s.status]),
                start_time=s.start_ns,
                end_time=s.end_ns,
                instrumentation_scope=scope,
            )
        )
    return out


class Sender:
    """Spans in, OTLP/HTTP out, off the caller's thread. :meth:`submit` never blocks: a
    span that finds the queue full is dropped and counted."""

    def __init__(
        self,
        endpoint: str | None,
        *,
        version: str,
        warn: Callable[[str], None],
        queue: int = QUEUE_SPANS,
        timeout: float | None = None,
    ) -> None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        _quiet()
        self._exporter = OTLPSpanExporter(endpoint=endpoint, timeout=timeout)
        self.endpoint = str(getattr(self._exporter, "_endpoint", endpoint))
        self._version = version
        self._warn = warn
        self._limit = queue
        self._queue: collections.deque[_Item] = collections.deque()
        self._cond = threading.Condition()
        self._closing = False
        self._busy = False
        self.sent = 0
        self.dropped = 0
        self.dropped_by: dict[str, int] = {}  # per capture uid, when the caller says
        self._warned = False
        self._thread = threading.Thread(target=self._run, name="acp-proxy-otlp", daemon=True)
        self._thread.start()

    def submit(
        self, spans: Sequence[SpanData], resource: Mapping[str, AttrValue], uid: str = ""
    ) -> None:
        with self._cond:
            for s in spans:
                if len(self._queue) >= self._limit:
                    self._drop(1, uid, "the export queue is full (a slow or dead collector)")
                else:
                    self._queue.append((s, resource, uid))
            self._cond.notify()

    def _drop(self, n: int, uid: str, why: str) -> None:
        self.dropped += n
        self.dropped_by[uid] = self.dropped_by.get(uid, 0) + n
        if not self._warned:
            self._warned = True
            self._warn(
                f"warning: OpenTelemetry spans dropped ({why}, {self.endpoint}); traffic "
                "is forwarded and recorded as always"
            )

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closing:
                    self._cond.wait()
                if not self._queue and self._closing:
                    return
                batch = [self._queue.popleft() for _ in range(min(BATCH_SPANS, len(self._queue)))]
                self._busy = True
            try:
                self._export(batch)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def _export(self, batch: list[_Item]) -> None:
        from opentelemetry.sdk.trace.export import SpanExportResult

        groups: dict[int, tuple[Mapping[str, AttrValue], str, list[SpanData]]] = {}
        for s, res, uid in batch:
            groups.setdefault(id(res), (res, uid, []))[2].append(s)
        for res, uid, spans in groups.values():
            ok = False
            with contextlib.suppress(Exception):  # the exporter must never take us down
                ok = self._exporter.export(readable(spans, res, self._version)) is (
                    SpanExportResult.SUCCESS
                )
            if ok:
                self.sent += len(spans)
            else:
                with self._cond:
                    self._drop(len(spans), uid, "the collector did not take them")

    def flush(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the queue to drain."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._queue or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def close(self, timeout: float) -> int:
        """Send what is queued (up to ``timeout`` seconds), then stop; what is left is
        dropped and counted. Returns the number of spans dropped in all."""
        self.flush(timeout)
        with self._cond:
            self._closing = True
            if self._queue:
                left = len(self._queue)
                for _, _, uid in self._queue:
                    self.dropped_by[uid] = self.dropped_by.get(uid, 0) + 1
                self.dropped += left
                self._queue.clear()
            self._cond.notify_all()
        with contextlib.suppress(Exception):
            self._exporter.shutdown()  # type: ignore[no-untyped-call]
        return self.dropped

"""A real OTLP/HTTP trace receiver on loopback: ``POST /v1/traces`` with a protobuf body,
decoded with the official ``opentelemetry-proto`` package (what a Collector does)."""

from __future__ import annotations

import gzip
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


def value(v: AnyValue) -> Any:
    which = v.WhichOneof("value")
    if which == "array_value":
        return [value(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return {kv.key: value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, which) if which else None


@dataclass
class Span:
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    start: int
    end: int
    attributes: dict[str, Any]
    events: list[tuple[str, int, dict[str, Any]]]
    links: list[tuple[str, str]]
    status: int
    status_message: str
    trace_state: str
    resource: dict[str, Any]


@dataclass
class Receiver:
    url: str
    requests: list[ExportTraceServiceRequest] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    mode: str = "ok"  # ok, hang (never answers in time), error (503)

    def spans(self) -> list[Span]:
        out = []
        for req in list(self.requests):
            for rs in req.resource_spans:
                res = {kv.key: value(kv.value) for kv in rs.resource.attributes}
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        out.append(
                            Span(
                                s.name,
                                s.trace_id.hex(),
                                s.span_id.hex(),
                                s.parent_span_id.hex(),
                                s.kind,
                                s.start_time_unix_nano,
                                s.end_time_unix_nano,
                                {kv.key: value(kv.value) for kv in s.attributes},
                                [
                                    (
                                        e.name,
                                        e.time_unix_nano,
                                        {kv.key: value(kv.value) for kv in e.attributes},
                                    )
                                    for e in s.events
                                ],
                                [(k.trace_id.hex(), k.span_id.hex()) for k in s.links],
                                s.status.code,
                                s.status.message,
                                s.trace_state,
                                res,
                            )
                        )
        return out

    def wait_for(self, n: int, timeout: float = 60) -> list[Span]:
        deadline = time.monotonic() + timeout
        while len(spans := self.spans()) < n:
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(spans)} spans arrived, {n} expected")
            time.sleep(0.05)
        return spans


@contextmanager
def otlp_receiver(mode: str = "ok") -> Iterator[Receiver]:
    rec = Receiver("", mode=mode)
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if rec.mode == "hang":
                stop.wait(120)
                return
            if rec.mode == "error":
                self.send_response(503)
                self.end_headers()
                return
            if self.path != "/v1/traces":
                self.send_response(404)
                self.end_headers()
                return
            encoding = self.headers.get("Content-Encoding", "")
            if encoding == "gzip":
                body = gzip.decompress(body)
            elif encoding == "deflate":
                body = zlib.decompress(body)
            req = ExportTraceServiceRequest()
            req.ParseFromString(body)
            rec.headers.append({k.lower(): v for k, v in self.headers.items()})
            rec.requests.append(req)
            out = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    rec.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield rec
    finally:
        stop.set()
        server.shutdown()
        server.server_close()

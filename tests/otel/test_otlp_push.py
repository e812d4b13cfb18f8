"""Captures reach a real OTLP/HTTP receiver (protobuf decoded with opentelemetry-proto):
``otel push`` of the demo and of a v2 capture, ``export --format otlp`` giving the same
spans as a file, the standard variables honoured, and the extra's absence said in one line."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from support.otlp import Receiver, Span, otlp_receiver
from support.paths import ROOT
from support.proc import PROXY

V2 = ROOT / "tests" / "data" / "replay" / "v2_session.jsonl"
SPAN_KEYS = {"traceId", "spanId", "name", "kind", "startTimeUnixNano", "endTimeUnixNano",
             "attributes", "events", "links", "status"}  # fmt: skip


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*PROXY, *args], capture_output=True, timeout=120,
                          env={**os.environ, **(env or {})})  # fmt: skip


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("demo")
    d.chmod(0o700)
    db = d / "demo.sqlite"
    r = run("demo", "--db", str(db))
    assert r.returncode == 0, r.stderr
    return db


def shape(spans: list[Span]) -> list[tuple[str, str, int]]:
    """(name, parent's name, depth) of every span, in a stable order."""
    by_id = {s.span_id: s for s in spans}
    out = []
    for s in spans:
        depth, p = 0, s.parent_id
        while p in by_id:
            depth, p = depth + 1, by_id[p].parent_id
        parent = by_id[s.parent_id].name if s.parent_id in by_id else ""
        out.append((s.name, parent, depth))
    return sorted(out)


def comparable(spans: list[Span]) -> list[tuple[Any, ...]]:
    return sorted(
        (s.trace_id, s.span_id, s.parent_id, s.name, s.kind, s.start, s.end,
         orjson.dumps(s.attributes, option=orjson.OPT_SORT_KEYS), s.status,
         tuple(e[0] for e in s.events))
        for s in spans
    )  # fmt: skip


def push(rec: Receiver, *args: str, env: dict[str, str] | None = None) -> list[Span]:
    before = len(rec.spans())
    r = run("otel", "push", *args, "--endpoint", rec.url, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == b""
    assert r.stderr.count(b"\n") == 1 and b"sent " in r.stderr
    return rec.spans()[before:]


def test_push_demo_capture(demo_db: Path) -> None:
    with otlp_receiver() as rec:
        spans = push(rec, "--db", str(demo_db))
        again = push(rec, "--db", str(demo_db))
    assert comparable(again) == comparable(spans)  # a re-push sends the same spans
    s = shape(spans)
    assert ("connection demo-agent", "", 0) in s
    assert s.count(("invoke_agent demo-agent", "connection demo-agent", 1)) == 2
    assert ("execute_tool Run the tests", "invoke_agent demo-agent", 2) in s
    assert ("session/request_permission", "execute_tool Run the tests", 3) in s
    assert ("fs/read_text_file", "invoke_agent demo-agent", 2) in s
    assert any(n.startswith("terminal ") and p == "execute_tool Run the tests" for n, p, _ in s)
    root = next(x for x in spans if x.name == "connection demo-agent")
    assert root.trace_id == "0af7651916cd43dd8448eb211c80319c"  # the client's traceparent
    assert root.parent_id == "b7ad6b7169203331"
    assert root.kind == 2  # SERVER
    assert root.resource["service.name"] == "acp-proxy"
    assert root.resource["service.version"]
    assert "acp_proxy.demo.agent" in " ".join(root.resource["acp.agent.command"])
    turn = next(x for x in spans if x.name == "invoke_agent demo-agent")
    assert turn.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert turn.attributes["gen_ai.response.finish_reasons"] == ["end_turn"]
    assert turn.attributes["gen_ai.agent.name"] == "demo-agent"
    assert turn.kind == 3  # CLIENT
    assert "gen_ai.input.messages" not in turn.attributes  # no content unless asked
    assert root.start <= turn.start <= turn.end <= root.end


def test_push_v2_capture_with_content() -> None:
    with otlp_receiver() as rec:
        spans = push(rec, str(V2), "--otel-content")
    turn = next(x for x in spans if x.name == "invoke_agent v2-agent")
    assert turn.attributes["gen_ai.response.id"] == "msg_u1"
    assert turn.attributes["gen_ai.response.finish_reasons"] == ["end_turn"]
    assert "run the tests" in turn.attributes["gen_ai.input.messages"]
    assert turn.trace_id == "0af7651916cd43dd8448eb211c80319c"
    tool = next(x for x in spans if x.name == "execute_tool cargo test")
    assert tool.parent_id == turn.span_id


def test_standard_variables(demo_db: Path) -> None:
    env = {
        "OTEL_SERVICE_NAME": "team-agents",
        "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=ci,team=core%2Cinfra",
        "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=s3cret",
    }
    with otlp_receiver() as rec:
        r = run("otel", "push", "--db", str(demo_db), env={
            **env, "OTEL_EXPORTER_OTLP_ENDPOINT": rec.url})  # fmt: skip
        assert r.returncode == 0, r.stderr
        spans = rec.spans()
        headers = rec.headers
    assert spans
    res = spans[0].resource
    assert res["service.name"] == "team-agents"
    assert res["deployment.environment"] == "ci" and res["team"] == "core,infra"
    assert headers[0]["x-api-key"] == "s3cret"


def _hex_ids_to_base64(obj: Any) -> Any:
    """OTLP/JSON writes ids as hex; the protobuf JSON mapping wants base64."""
    if isinstance(obj, dict):
        return {
            k: base64.b64encode(bytes.fromhex(v)).decode()
            if k in ("traceId", "spanId", "parentSpanId") and isinstance(v, str)
            else _hex_ids_to_base64(v)
            for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [_hex_ids_to_base64(x) for x in obj]
    return obj


def test_export_otlp_file_matches_push(demo_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "c.otlp.json"
    r = run("export", "--db", str(demo_db), "--format", "otlp", "-o", str(out))
    assert r.returncode == 0, r.stderr
    data = out.read_bytes()
    assert data.endswith(b"\n") and data.count(b"\n") == 1  # one request per line
    doc = orjson.loads(data)
    (rs,) = doc["resourceSpans"]
    assert {a["key"] for a in rs["resource"]["attributes"]} >= {"service.name", "service.version"}
    (ss,) = rs["scopeSpans"]
    assert ss["scope"]["name"] == "acp-proxy"
    for s in ss["spans"]:
        assert s.keys() >= SPAN_KEYS
        assert len(s["traceId"]) == 32 and len(s["spanId"]) == 16
        int(s["traceId"], 16), int(s["spanId"], 16)
        assert s["kind"] in (1, 2, 3) and s["status"]["code"] in (0, 1, 2)
        assert int(s["startTimeUnixNano"]) <= int(s["endTimeUnixNano"])
        for a in s["attributes"]:
            (kind,) = a["value"].keys()
            assert kind in ("stringValue", "intValue", "boolValue", "doubleValue", "arrayValue")
            if kind == "intValue":
                assert isinstance(a["value"]["intValue"], str)
    # the protobuf JSON parser takes it (ids converted from hex as OTLP/JSON specifies)
    req = json_format.Parse(orjson.dumps(_hex_ids_to_base64(doc)), ExportTraceServiceRequest())
    parsed = Receiver("", requests=[req]).spans()
    with otlp_receiver() as rec:
        pushed = push(rec, "--db", str(demo_db))
    assert comparable(parsed) == comparable(pushed)
    assert parsed[0].resource == pushed[0].resource


def test_push_to_a_dead_endpoint_fails_in_one_line(demo_db: Path) -> None:
    with otlp_receiver() as rec:
        url = rec.url  # closed on exit: nothing listens there any more
    r = run("otel", "push", "--db", str(demo_db), "--endpoint", url, "--timeout", "0.5")
    assert r.returncode == 1
    assert r.stderr.count(b"\n") == 1 and b"did not take" in r.stderr
    assert b"Traceback" not in r.stderr


BLOCKER = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry" or name.startswith("opentelemetry."):
            raise ImportError("blocked: " + name)
        return None
sys.meta_path.insert(0, Block())
sys.argv = ["acp-proxy", *sys.argv[1:]]
from acp_proxy.cli import main
main()
"""


def without_extra(
    *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-c", BLOCKER, *args], capture_output=True,
                          timeout=120, env={**os.environ, **(env or {})})  # fmt: skip


def test_missing_extra_is_one_clear_line(demo_db: Path, tmp_path: Path) -> None:
    for args in (
        ["otel", "push", "--db", str(demo_db), "--endpoint", "http://127.0.0.1:9"],
        ["record", "--db", str(tmp_path / "r.sqlite"), "--otlp-endpoint", "http://127.0.0.1:9",
         "--", sys.executable, "-c", "pass"],
    ):  # fmt: skip
        r = without_extra(*args)
        assert r.returncode == 2, r.stderr
        assert r.stderr.count(b"\n") == 1
        assert b"acp-proxy[otel]" in r.stderr and b"Traceback" not in r.stderr
    # the file export needs no extra
    r = without_extra("export", "--db", str(demo_db), "--format", "otlp")
    assert r.returncode == 0, r.stderr
    assert orjson.loads(r.stdout)["resourceSpans"]
    # the standard variable alone only warns: the session is recorded as always
    db = tmp_path / "w.sqlite"
    r = without_extra("record", "--db", str(db), "--", sys.executable, "-c",
                      "import sys; sys.stdout.write(sys.stdin.read())",
                      env={"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})  # fmt: skip
    assert r.returncode == 0 and b"acp-proxy[otel]" in r.stderr

"""Child sessions, replayed history, retried prompts and the latest GenAI conventions in
the spans (docs/otel.md): a subagent is an ``invoke_agent`` span in its parent's trace;
history is never new execution; an ``idempotencyKey`` never leaves the machine; and what
``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` adds, and only then."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import orjson
from support.otlp import otlp_receiver
from support.paths import DATA
from support.proc import PROXY

from acp_proxy.export.jsonl import read_jsonl
from acp_proxy.otel.core.fold import CaptureInfo
from acp_proxy.otel.core.model import SpanData
from acp_proxy.otel.source import trace_capture
from acp_proxy.protocol.frames import Frame

FIXTURES = DATA / "reconstruct"
LATEST = {"OTEL_SEMCONV_STABILITY_OPT_IN": "http, gen_ai_latest_experimental"}
INFO = CaptureInfo("c" * 32, 1_700_000_000_000_000_000)


def _frames(name: str) -> list[Frame]:
    with open(FIXTURES / name, "rb") as f:
        return list(read_jsonl(f))


def _spans(frames: list[Frame], env: dict[str, str] | None = None, **kw: Any) -> list[SpanData]:
    return trace_capture(INFO, frames, env=env or {}, **kw)[0]


def _named(spans: list[SpanData], name: str) -> SpanData:
    (s,) = [s for s in spans if s.name == name]
    return s


def test_a_subagent_is_an_invoke_agent_span_in_its_parents_trace() -> None:
    for fixture, tool, child_tool in (
        ("v1-subagents.jsonl", "execute_tool Delegate to reviewer", "execute_tool Read parser.py"),
        ("v2-subagents.jsonl", "execute_tool Run tests in a subagent", None),
    ):
        spans = _spans(_frames(fixture))
        assert len({s.trace_id for s in spans}) == 1  # the child's work is in the parent's trace
        child = next(s for s in spans if s.attributes.get("gen_ai.conversation.id") == "child"
                     and s.name.startswith("invoke_agent"))  # fmt: skip
        assert child.kind == "internal"
        assert child.parent_id == _named(spans, tool).span_id  # the tool call that links it
        assert child.attributes["acp.subagent.parent_session_id"] == "parent"
        assert child.attributes["gen_ai.operation.name"] == "invoke_agent"
        if child_tool is not None:
            assert _named(spans, child_tool).parent_id == child.span_id
        roots = [s for s in spans if s.name.startswith("connection")]
        assert [r.attributes["gen_ai.conversation.id"] for r in roots] == ["parent"]


def test_history_is_never_new_execution() -> None:
    """A child first named by a history replay gets no ``invoke_agent`` span, nor does the
    replay make a turn; what the child said goes under the parent's connection."""
    frames = _frames("v2-subagents.jsonl")
    replay_only = [f for f in frames if f.seq < 4 or f.seq >= 21]
    spans = _spans(replay_only)
    assert not [s.name for s in spans if s.name.startswith(("invoke_agent", "execute_tool"))]
    live = _spans(frames)
    assert len([s for s in live if s.name.startswith("invoke_agent")]) == 2  # turn and child


def test_a_retried_prompt_is_one_turn_and_its_key_never_leaves() -> None:
    spans = _spans(_frames("v2-subagents.jsonl"), LATEST, content=True)
    turn = _named(spans, "invoke_agent fixture-agent")
    assert turn.attributes["acp.turn.retries"] == 1
    assert [e.name for e in turn.events].count("acp.prompt_retried") == 1
    assert turn.attributes["rpc.jsonrpc.request_id"] == "2"  # the first attempt
    assert not [s for s in spans if s.attributes.get("rpc.method") == "session/prompt"
                and s is not turn]  # fmt: skip
    everything = orjson.dumps([(s.name, s.attributes, [e.attributes for e in s.events])
                               for s in spans]).decode()  # fmt: skip
    assert "submit-1" not in everything and "idempotencyKey" not in everything
    assert "fix the tests" in everything  # content was asked for: the prompt is there


def test_the_latest_conventions_only_when_asked() -> None:
    frames = _frames("v2-subagents.jsonl")
    default = _spans(frames)
    assert not [s for s in default if "gen_ai.provider.name" in s.attributes]
    latest = _spans(frames, LATEST)
    agents = [s for s in latest if s.attributes.get("gen_ai.operation.name") == "invoke_agent"]
    assert len(agents) == 2
    assert {s.attributes["gen_ai.provider.name"] for s in agents} == {"acp"}
    turn = _named(latest, "invoke_agent fixture-agent")
    assert turn.attributes["gen_ai.response.time_to_first_chunk"] == 0.007  # seconds
    added = {"gen_ai.provider.name", "gen_ai.response.time_to_first_chunk"}

    # the rest is the default mapping, unchanged
    def plain(spans: list[SpanData]) -> list[tuple[str, dict[str, Any]]]:
        return sorted((s.name, {k: v for k, v in s.attributes.items()
                                if k not in added}) for s in spans)  # fmt: skip

    assert plain(latest) == plain(default)


def _failing_turn(tmp_path: Path) -> Path:
    texts = [
        ("c2a", {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                 "params": {"protocolVersion": 1, "clientCapabilities": {}}}),
        ("a2c", {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1,
                 "agentCapabilities": {}, "agentInfo": {"name": "a", "version": "1"}}}),
        ("c2a", {"jsonrpc": "2.0", "id": 1, "method": "session/new",
                 "params": {"cwd": "/w", "mcpServers": []}}),
        ("a2c", {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s"}}),
        ("c2a", {"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                 "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}]}}),
        ("a2c", {"jsonrpc": "2.0", "id": 2, "error": {"code": -32603, "message": "boom"}}),
    ]  # fmt: skip
    path = tmp_path / "fails.jsonl"
    path.write_text("".join(
        json.dumps({"capture": "f", "seq": i, "direction": d, "t_ns": i * 1000,
                    "text": json.dumps(v), "terminated": True}) + "\n"
        for i, (d, v) in enumerate(texts)
    ))  # fmt: skip
    return path


def test_latest_conventions_through_export_and_push(tmp_path: Path) -> None:
    """The variable is read where spans are made: ``export --format otlp`` and ``otel
    push`` (a failed turn gets ``error.type``)."""
    source = _failing_turn(tmp_path)
    out = tmp_path / "out.otlp.json"
    env = {**os.environ, **LATEST}
    r = subprocess.run([*PROXY, "export", str(source), "--format", "otlp", "-o", str(out)],
                       capture_output=True, timeout=60, env=env)  # fmt: skip
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert '"key":"gen_ai.provider.name"' in text.replace(" ", "")
    assert '"key":"error.type","value":{"stringValue":"-32603"}' in text.replace(" ", "")
    with otlp_receiver() as rec:
        r = subprocess.run([*PROXY, "otel", "push", str(source), "--endpoint", rec.url],
                           capture_output=True, timeout=60, env=env)  # fmt: skip
        assert r.returncode == 0, r.stderr
        turn = next(s for s in rec.spans() if s.name == "invoke_agent a")
    assert turn.attributes["error.type"] == "-32603"
    assert turn.attributes["gen_ai.provider.name"] == "acp"

"""Live spans: ``record`` and ``ws`` with ``--otlp-endpoint`` send, as the session runs,
the same spans an export of the capture gives afterwards; a dead or hanging collector
costs dropped telemetry (said once, and written into the capture), never the session."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from acp import PROTOCOL_VERSION, connect_to_agent, spawn_agent_process, text_block
from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation
from acp.ws import create_websocket_stream
from support.otlp import Receiver, Span, otlp_receiver
from support.paths import PEERS
from support.proc import PROXY, db_rows, wait_recorded
from support.sdk import RecordingClient

from acp_proxy.demo import client as demo_client

DEMO_AGENT = [sys.executable, "-m", "acp_proxy.demo.agent"]
SDK_AGENT = [sys.executable, str(PEERS / "sdk_agent.py")]


def comparable(spans: list[Span]) -> list[tuple[object, ...]]:
    return sorted(
        (s.trace_id, s.span_id, s.parent_id, s.name, s.kind, s.start, s.end,
         orjson.dumps(s.attributes, option=orjson.OPT_SORT_KEYS), s.status,
         tuple(e[0] for e in s.events), tuple(sorted(s.resource)))
        for s in spans
    )  # fmt: skip


def exported(db: Path, *extra: str) -> list[Span]:
    with otlp_receiver() as rec:
        r = subprocess.run([*PROXY, "otel", "push", "--db", str(db), "--endpoint", rec.url, *extra],
                           capture_output=True, timeout=120)  # fmt: skip
        assert r.returncode == 0, r.stderr
        return rec.spans()


def record_argv(db: Path, *extra: str, agent: list[str]) -> list[str]:
    return [*PROXY, "record", "--db", str(db), *extra, "--", *agent]


def test_live_record_demo_equals_export(tmp_path: Path, db: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    with otlp_receiver() as rec:
        code, _ = demo_client.run(record_argv(db, "--otlp-endpoint", rec.url, agent=DEMO_AGENT), ws)
        assert code == 0
        wait_recorded(db)
        live = rec.spans()
    after = exported(db)
    assert len(live) == len(after) > 10
    assert comparable(live) == comparable(after)


async def _two_turns_watched(argv: list[str], cwd: Path, rec: Receiver) -> list[Span]:
    """The official SDK as the client; between the turns, the first turn's spans are
    waited for at the receiver: they come while the session still runs."""
    client = RecordingClient()
    async with spawn_agent_process(client, argv[0], *argv[1:]) as (conn, _proc):
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True)),
            client_info=Implementation(name="sdk-test-client", version="0.1.0"),
        )
        session = await conn.new_session(cwd=str(cwd), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[text_block("hello")])
        during = await asyncio.to_thread(rec.wait_for, 1)
        await conn.prompt(session_id=session.session_id, prompt=[text_block("again")])
    return during


def test_live_record_sdk_peers(tmp_path: Path, db: Path) -> None:
    (tmp_path / "notes.txt").write_text("remember the milk\n")
    with otlp_receiver() as rec:
        argv = record_argv(db, "--otlp-endpoint", rec.url, "--otel-content", agent=SDK_AGENT)
        during = asyncio.run(_two_turns_watched(argv, tmp_path, rec))
        wait_recorded(db)
        live = rec.spans()
    # the first turn and its children, sent before the second prompt; not the connection
    assert {s.name for s in during} >= {"invoke_agent sdk-test-agent", "fs/read_text_file"}
    assert all(not s.name.startswith("connection") for s in during)
    after = exported(db, "--otel-content")
    # This agent reuses the tool call id ``call_1`` in every turn: that tool call belongs
    # to the turn that first showed it, and the live span carries what was known when that
    # turn ended (docs/otel.md); an export afterwards also sees the later turn's updates.
    # Every other span is the same either way.
    reused = {s.span_id for s in live if s.name == "execute_tool Read notes"}
    assert len(reused) == 1
    assert comparable([s for s in live if s.span_id not in reused]) == comparable(
        [s for s in after if s.span_id not in reused]
    )
    (early,) = [s for s in live if s.span_id in reused]
    (late,) = [s for s in after if s.span_id in reused]
    assert early.attributes["acp.tool.updates"] < late.attributes["acp.tool.updates"]
    turns = [s for s in live if s.name == "invoke_agent sdk-test-agent"]
    assert len(turns) == 2
    assert "hello" in turns[0].attributes["gen_ai.input.messages"]  # --otel-content
    assert any(s.name == "fs/read_text_file" for s in live)
    assert any(s.name == "session/request_permission" for s in live)
    root = next(s for s in live if s.name == "connection sdk-test-agent")
    assert root.attributes["acp.client.name"] == "sdk-test-client"
    assert root.attributes["gen_ai.conversation.id"] == "sdk-session-1"
    assert root.attributes["acp.transport"] == "stdio"


async def _ws_session(url: str, cwd: Path) -> list[str]:
    client = RecordingClient()
    transport = await create_websocket_stream(url)
    conn = connect_to_agent(client, transport)
    try:
        await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True)),
            client_info=Implementation(name="sdk-ws-client", version="0.1.0"),
        )
        session = await conn.new_session(cwd=str(cwd), mcp_servers=[])
        r = await conn.prompt(session_id=session.session_id, prompt=[text_block("hello")])
        return [r.stop_reason]
    finally:
        await conn.close()
        await transport.close()


def test_live_ws(tmp_path: Path, db: Path) -> None:
    (tmp_path / "notes.txt").write_text("remember the milk\n")
    with otlp_receiver() as rec:
        proc = subprocess.Popen(
            [*PROXY, "ws", "--db", str(db), "--listen", "127.0.0.1:0",
             "--otlp-endpoint", rec.url, "--", *SDK_AGENT],
            stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            assert proc.stderr is not None
            line = proc.stderr.readline().decode()
            m = re.search(r"listening on (ws://\S+)", line)
            assert m, line
            stops = asyncio.run(_ws_session(m.group(1) + "/acp", tmp_path))
            # the turn's spans arrive while the listener still runs
            spans = rec.wait_for(1)
            assert any(s.name == "invoke_agent sdk-test-agent" for s in spans)
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(60)
        wait_recorded(db)
        live = rec.spans()
    assert stops == ["end_turn"]
    assert comparable(live) == comparable(exported(db))
    root = next(s for s in live if s.name == "connection sdk-test-agent")
    assert root.attributes["acp.transport"] == "ws-stdio"


@pytest.mark.parametrize("mode", ["dead", "hang"])
def test_collector_down_costs_only_telemetry(
    tmp_path: Path, db: Path, mode: str, capfd: pytest.CaptureFixture[str]
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {**os.environ, "OTEL_EXPORTER_OTLP_TIMEOUT": "1"}
    with otlp_receiver("hang") as rec:
        url = rec.url
        if mode == "dead":
            rec.mode = "ok"
    if mode == "dead":  # nothing listens there any more
        code = _demo(db, url, ws, env)
    else:
        with otlp_receiver("hang") as rec:
            code = _demo(db, rec.url, ws, env)
    assert code == 0  # the session went as it goes without telemetry
    err = capfd.readouterr().err
    log = Path(f"{db}.log").read_text() if Path(f"{db}.log").exists() else ""
    warnings = (err + log).count("OpenTelemetry spans dropped")
    assert warnings == 1, err + log
    ((detail,),) = db_rows(db, "SELECT detail FROM events WHERE kind = 'otel_dropped'")
    assert orjson.loads(str(detail))["spans"] > 0
    # and every frame is recorded
    (n,) = db_rows(db, "SELECT COUNT(*) FROM messages")[0]
    assert n > 40


def _demo(db: Path, url: str, ws: Path, env: dict[str, str]) -> int:
    old = dict(os.environ)
    os.environ.update(env)
    try:
        code, _ = demo_client.run(record_argv(db, "--otlp-endpoint", url, agent=DEMO_AGENT), ws)
    finally:
        os.environ.clear()
        os.environ.update(old)
    wait_recorded(db)
    return code

"""The official TypeScript SDK (npm ``@agentclientprotocol/sdk``) as real peers through the proxy.

tests/npm/client.mjs and tests/npm/agent.mjs are a client and an agent written against the
SDK's public API (v1 from the default entrypoint, v2 from ``./experimental/v2``). Each pair
runs directly and through ``acp-proxy record``: what the peers see must not change, and the
database must hold the exchange byte for byte. The TS peers are also paired with the official
Python SDK's, and the TS SDK's own tolerance of odd input (CRLF, invalid JSON, arrays) must
reach the client unchanged through the proxy.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from support.paths import TESTS
from support.proc import PROXY, db_rows, peer, wait_recorded
from support.sdk import sdk_session as python_sdk_session
from support.views import assert_views_stream

from acp_proxy.protocol.frames import Direction
from acp_proxy.store.reader import Store

pytestmark = pytest.mark.interop

NPM = TESTS / "npm"
SDK_VERSION = "2.4.0"
INSTALL_HINT = "run `npm ci --prefix tests/npm` to install the TypeScript SDK test peers"
TS_AGENT = ["node", str(NPM / "agent.mjs")]
TS_CLIENT = ["node", str(NPM / "client.mjs")]
PROMPTS = ["hello", "héllo ✔"]
TWO_TURNS = [  # the requests of two prompt turns that each ask for permission
    "initialize",
    "session/new",
    "session/prompt",
    "session/request_permission",
    "session/prompt",
    "session/request_permission",
]
C2A, A2C = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT


@pytest.fixture(autouse=True)
def _typescript_sdk() -> None:
    """Fail, not skip, when the peers cannot run: CI installs them."""
    if shutil.which("node") is None:
        pytest.fail(f"node is not on PATH; install Node.js 20+, then {INSTALL_HINT}")
    installed = NPM / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json"
    if not installed.is_file():
        pytest.fail(f"tests/npm/node_modules is missing: {INSTALL_HINT}")
    version = json.loads(installed.read_text())["version"]
    if version != SDK_VERSION:
        pytest.fail(
            f"@agentclientprotocol/sdk {version} is installed, not {SDK_VERSION}: {INSTALL_HINT}"
        )


def recorded(db: Path, agent: list[str]) -> list[str]:
    return [*PROXY, "record", "--db", str(db), "--", *agent]


def ts_client(agent: list[str], cwd: Path, *, v2: bool = False) -> dict[str, Any]:
    """Run the TS client against ``agent``; its one-line JSON summary."""
    proc = subprocess.run(
        [*TS_CLIENT, *(["--v2"] if v2 else []), *agent],
        cwd=cwd,
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout
    summary: dict[str, Any] = json.loads(lines[0])
    assert summary["agentExit"] == {"code": 0, "signal": None}, proc.stderr
    return summary


def ts_client_both(
    agent: list[str], db: Path, cwd: Path, *, v2: bool = False
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The TS client's summaries against ``agent`` directly and through the recording proxy."""
    with ThreadPoolExecutor(2) as pool:
        direct = pool.submit(ts_client, agent, cwd, v2=v2)
        proxied = pool.submit(ts_client, recorded(db, agent), cwd, v2=v2)
        return direct.result(), proxied.result()


def frames(stream: bytes) -> list[dict[str, Any]]:
    """A stored stdio stream as newline-delimited JSON: every line one JSON object."""
    assert stream.endswith(b"\n")
    out = [json.loads(line) for line in stream.split(b"\n")[:-1]]
    assert all(isinstance(m, dict) for m in out)
    return out


def stream(db: Path, direction: Direction) -> bytes:
    """What crossed the proxy in ``direction`` in the latest capture, as stored."""
    wait_recorded(db)
    store = Store(db)
    try:
        return store.stream_bytes(store.capture(None)["id"], direction)
    finally:
        store.close()


def assert_recorded(db: Path, version: int, client: str, agent: str, methods: list[str]) -> None:
    """The latest capture: its version and peers' names, these requests and each answered."""
    wait_recorded(db)
    store = Store(db)
    try:
        c = store.capture(None)
    finally:
        store.close()
    assert c["protocol_version"] == version
    assert json.loads(c["client_info"])["name"] == client
    assert json.loads(c["agent_info"])["name"] == agent
    rows = db_rows(db, "SELECT method FROM messages WHERE kind='request' ORDER BY seq")
    assert [str(m) for (m,) in rows] == methods
    assert db_rows(db, "SELECT COUNT(*) FROM requests WHERE response_seq IS NULL") == [(0,)]


def updates_sent(a2c: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m["params"] for m in a2c if m.get("method") == "session/update"]


def test_typescript_sdk_peers_agree_through_the_proxy(tmp_path: Path, db: Path) -> None:
    direct, proxied = ts_client_both(TS_AGENT, db, tmp_path)
    assert proxied == direct

    assert direct["protocolVersion"] == 1
    assert direct["agentInfo"]["name"] == "ts-test-agent"
    assert direct["initializeMeta"] == {"ts-sdk": True, "requested": 1}
    assert direct["stopReasons"] == ["end_turn", "end_turn"]
    kinds = [u["update"]["sessionUpdate"] for u in direct["updates"]]
    assert kinds == ["agent_message_chunk", "tool_call", "tool_call_update"] * 2
    chunks = [u for u in direct["updates"] if u["update"]["sessionUpdate"] == "agent_message_chunk"]
    assert [c["update"]["content"]["text"] for c in chunks] == [f"echo: {p}" for p in PROMPTS]
    assert all(c["update"]["_meta"] == {"echo": True} for c in chunks)
    assert all(c["_meta"] == {"sdk": "typescript"} for c in chunks)
    assert direct["updates"][2]["update"]["rawOutput"] == {"permission": "ok"}
    assert [p["toolCall"]["toolCallId"] for p in direct["permissions"]] == ["call_1", "call_2"]

    assert_recorded(db, 1, "ts-test-client", "ts-test-agent", TWO_TURNS)
    c2a, a2c = frames(stream(db, C2A)), frames(stream(db, A2C))
    # what was recorded is what the client was handed, and what it sent
    assert updates_sent(a2c) == direct["updates"]
    prompts = [m["params"] for m in c2a if m.get("method") == "session/prompt"]
    assert [p["prompt"][0]["text"] for p in prompts] == PROMPTS
    answers = [m["result"] for m in c2a if "result" in m]
    assert answers == [{"outcome": {"outcome": "selected", "optionId": "ok"}}] * 2
    assert_views_stream(db, None, (5, 10))  # the views read from the frames they need


def test_typescript_sdk_v2_peers_agree_through_the_proxy(tmp_path: Path, db: Path) -> None:
    agent = [*TS_AGENT, "--v2"]
    direct, proxied = ts_client_both(agent, db, tmp_path, v2=True)
    assert proxied == direct

    assert direct["protocolVersion"] == 2
    assert direct["agentInfo"]["name"] == "ts-test-agent"
    # v2: the prompt is only acknowledged; the turn ends with an idle state_update
    assert direct["promptResponses"] == [{"messageId": "msg_user_1"}, {"messageId": "msg_user_2"}]
    assert direct["stopReasons"] == ["end_turn", "end_turn"]
    kinds = [u["update"]["sessionUpdate"] for u in direct["updates"]]
    turn = ["user_message", "state_update", "agent_message_chunk", "tool_call_update"]
    turn += ["state_update", "state_update", "tool_call_update", "state_update"]
    assert kinds == turn * 2
    assert direct["updates"][-1]["update"] == {
        "sessionUpdate": "state_update",
        "state": "idle",
        "stopReason": "end_turn",
    }
    assert [p["subject"]["toolCall"]["toolCallId"] for p in direct["permissions"]] == [
        "call_1",
        "call_2",
    ]

    assert_recorded(db, 2, "ts-test-client", "ts-test-agent", TWO_TURNS)
    a2c = frames(stream(db, A2C))
    frames(stream(db, C2A))
    assert updates_sent(a2c) == direct["updates"]
    assert_views_stream(db, None, (8, 16))


def test_typescript_client_through_the_proxy_with_the_python_sdk_agent(
    tmp_path: Path, db: Path
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("remember the milk\n")
    agent = peer("sdk_agent.py")
    direct, proxied = ts_client_both(agent, db, tmp_path)
    assert proxied == direct

    assert direct["agentInfo"]["name"] == "sdk-test-agent"
    assert direct["stopReasons"] == ["end_turn", "end_turn"]
    assert direct["reads"] == [str(notes)] * 2
    assert direct["updates"][-1]["update"]["rawOutput"] == {"chars": 18}
    chunks = [u for u in direct["updates"] if u["update"]["sessionUpdate"] == "agent_message_chunk"]
    assert [c["update"]["content"]["text"] for c in chunks] == [f"echo: {p}" for p in PROMPTS]

    turn = ["session/prompt", "session/request_permission", "fs/read_text_file"]
    assert_recorded(db, 1, "ts-test-client", "sdk-test-agent", [*TWO_TURNS[:2], *turn, *turn])


async def test_python_sdk_client_through_the_proxy_with_the_typescript_agent(
    tmp_path: Path, db: Path
) -> None:
    direct, proxied = await asyncio.gather(
        python_sdk_session(TS_AGENT, tmp_path),
        python_sdk_session(recorded(db, TS_AGENT), tmp_path),
    )
    assert proxied == direct

    updates, stops, agent_name = direct
    assert agent_name == "ts-test-agent"
    assert stops == ["end_turn", "end_turn"]
    echoes = [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert echoes == ["echo: hello", "echo: héllo wörld ✔"]
    assert updates[-1]["rawOutput"] == {"permission": "ok"}

    assert_recorded(db, 1, "sdk-test-client", "ts-test-agent", TWO_TURNS)


async def test_typescript_agent_tolerance_survives_the_proxy(tmp_path: Path, db: Path) -> None:
    """CRLF, padding, invalid JSON and an array: the TS SDK's answers reach the client as sent."""
    proc = await asyncio.create_subprocess_exec(
        *recorded(db, TS_AGENT),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        cwd=tmp_path,
    )
    assert proc.stdin is not None and proc.stdout is not None
    sent = bytearray()
    received = bytearray()

    async def exchange(line: bytes) -> dict[str, Any]:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(line)
        await proc.stdin.drain()
        sent.extend(line)
        reply = await asyncio.wait_for(proc.stdout.readline(), 30)
        received.extend(reply)
        assert reply.endswith(b"\n"), reply
        answer: dict[str, Any] = json.loads(reply)
        return answer

    try:
        init = await exchange(
            b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\r\n'
        )
        assert init["id"] == 0 and init["result"]["agentInfo"]["name"] == "ts-test-agent"
        bad = await exchange(b'{"jsonrpc":"2.0","id":1,"method":\n')
        assert bad == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32700, "message": "Parse error"},
        }
        batch = await exchange(b"[]\n")
        assert batch["id"] is None and batch["error"]["code"] == -32600
        session_new = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/new",
            "params": {"cwd": str(tmp_path), "mcpServers": []},
        }
        new = await exchange(b"  " + json.dumps(session_new).encode() + b"  \r\n")
        assert new == {"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "ts-session-1"}}
        proc.stdin.close()
        assert await asyncio.wait_for(proc.stdout.read(), 30) == b""
        assert await asyncio.wait_for(proc.wait(), 30) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()

    assert stream(db, C2A) == bytes(sent)
    assert stream(db, A2C) == bytes(received)
    rows = db_rows(db, "SELECT direction, kind, method, error_code FROM messages ORDER BY seq")
    assert rows == [
        ("c2a", "request", "initialize", None),
        ("a2c", "response", "initialize", None),
        ("c2a", "invalid", None, None),
        ("a2c", "error", None, -32700),
        ("c2a", "batch", None, None),
        ("a2c", "error", None, -32600),
        ("c2a", "request", "session/new", None),
        ("a2c", "response", "session/new", None),
    ]
    assert db_rows(db, "SELECT msg_id FROM messages WHERE kind='error'") == [("null",), ("null",)]

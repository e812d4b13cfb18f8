"""The official Python SDK as both peers, through the proxy and without it: same results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, Client, spawn_agent_process, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    FileSystemCapabilities,
    Implementation,
    ReadTextFileResponse,
    RequestPermissionResponse,
)
from conftest import PROXY, db_rows, peer

from acp_proxy.protocol.frames import Direction
from acp_proxy.store.reader import Store


class RecordingClient(Client):
    def __init__(self) -> None:
        self.updates: list[dict[str, Any]] = []

    async def request_permission(
        self, session_id: str, tool_call: Any, options: Any, **kwargs: Any
    ) -> RequestPermissionResponse:
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id="ok"))

    async def read_text_file(
        self, session_id: str, path: str, **kwargs: Any
    ) -> ReadTextFileResponse:
        return ReadTextFileResponse(content=Path(path).read_text())

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update.model_dump(mode="json", by_alias=True, exclude_none=True))


async def _session(command: list[str], cwd: Path) -> tuple[list[dict[str, Any]], list[str], str]:
    client = RecordingClient()
    async with spawn_agent_process(client, command[0], *command[1:]) as (conn, _proc):
        init = await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True)),
            client_info=Implementation(name="sdk-test-client", version="0.1.0"),
        )
        session = await conn.new_session(cwd=str(cwd), mcp_servers=[])
        stops = []
        for text in ("hello", "héllo wörld ✔"):
            r = await conn.prompt(session_id=session.session_id, prompt=[text_block(text)])
            stops.append(r.stop_reason)
        assert init.agent_info is not None
        return client.updates, stops, init.agent_info.name


async def test_official_sdk_peers_agree_through_the_proxy(tmp_path: Path, db: Path) -> None:
    (tmp_path / "notes.txt").write_text("remember the milk\n")
    agent = peer("sdk_agent.py")
    direct = await _session(agent, tmp_path)
    proxied = await _session([*PROXY, "record", "--db", str(db), "--", *agent], tmp_path)
    assert proxied == direct
    assert direct[1] == ["end_turn", "end_turn"]
    assert {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "call_1",
        "status": "completed",
        "rawOutput": {"chars": 18},
    }.items() <= direct[0][-1].items()

    store = Store(db)
    c = store.capture(None)
    assert c["protocol_version"] == 1
    assert "sdk-test-client" in c["client_info"] and "sdk-test-agent" in c["agent_info"]
    methods = [
        m for (m,) in db_rows(db, "SELECT method FROM messages WHERE kind='request' ORDER BY seq")
    ]
    assert methods == [
        "initialize",
        "session/new",
        "session/prompt",
        "session/request_permission",
        "fs/read_text_file",
        "session/prompt",
        "session/request_permission",
        "fs/read_text_file",
    ]
    unpaired = db_rows(db, "SELECT COUNT(*) FROM requests WHERE response_seq IS NULL")
    assert unpaired == [(0,)]
    # the stored agent stream is newline-delimited JSON that decodes to what the client saw
    out = store.stream_bytes(c["id"], Direction.AGENT_TO_CLIENT)
    assert out.endswith(b"\n")
    echoes = [
        json.loads(line)["params"]["update"]["content"]["text"]
        for line in out.splitlines()
        if b"agent_message_chunk" in line
    ]
    assert echoes == ["echo: hello", "echo: héllo wörld ✔"]
    store.close()

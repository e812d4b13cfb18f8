"""The official Python SDK as both peers, through the proxy and without it: same results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.proc import PROXY, db_rows, peer, wait_recorded
from support.sdk import sdk_session
from support.views import assert_views_stream

from acp_proxy.protocol.frames import Direction
from acp_proxy.store.reader import Store

pytestmark = pytest.mark.interop


async def test_official_sdk_peers_agree_through_the_proxy(tmp_path: Path, db: Path) -> None:
    (tmp_path / "notes.txt").write_text("remember the milk\n")
    agent = peer("sdk_agent.py")
    direct = await sdk_session(agent, tmp_path)
    proxied = await sdk_session([*PROXY, "record", "--db", str(db), "--", *agent], tmp_path)
    assert proxied == direct
    wait_recorded(db)  # it outlives the relay
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
    assert_views_stream(db, None, (4, 9))  # the views read from the frames they need

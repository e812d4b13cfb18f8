"""``replay agent --listen``: the recording stands in for an agent over WebSocket."""

from __future__ import annotations

import asyncio
import re
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from acp import connect_to_agent
from acp.ws import create_websocket_stream
from support.replay import DATA, SdkClient, play_demo_session, replay_agent_cmd
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from acp_proxy.demo import run_demo


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("replay-ws") / "demo.sqlite"
    run_demo(db)
    return db


class Server:
    def __init__(self, proc: asyncio.subprocess.Process, url: str) -> None:
        self.proc = proc
        self.url = url

    async def result(self) -> tuple[int, str]:
        assert self.proc.stderr is not None
        rest = await asyncio.wait_for(self.proc.stderr.read(), 30)
        return await asyncio.wait_for(self.proc.wait(), 30), rest.decode()


async def _serve(*args: str) -> AsyncIterator[Server]:
    proc = await asyncio.create_subprocess_exec(
        *args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stderr is not None
    line = await asyncio.wait_for(proc.stderr.readline(), 30)
    found = re.search(r" at (ws://\S+)", line.decode())
    assert found is not None, line
    yield Server(proc, found.group(1))
    if proc.returncode is None:
        proc.kill()
        await proc.wait()


@pytest.fixture
async def demo_server(demo_db: Path) -> AsyncIterator[Server]:
    async for s in _serve(*replay_agent_cmd(demo_db, "--listen", "127.0.0.1:0")):
        yield s


async def test_sdk_client_over_websocket_sees_the_recording(
    demo_server: Server, tmp_path: Path
) -> None:
    client = SdkClient(tmp_path)
    conn = connect_to_agent(client, await create_websocket_stream(demo_server.url))
    results = await play_demo_session(conn, client, tmp_path)
    await conn.close()
    assert results[1:] == [
        "end_turn",
        {"prompts": 1, "uptimeMs": 12, "_meta": {"demo.acp-proxy/custom": True}},
        "cancelled",
    ]
    assert [u["sessionUpdate"] for u in client.updates].count("tool_call") == 3
    assert '"debug": true' in (tmp_path / "config.json").read_text()
    code, err = await demo_server.result()
    assert code == 0, err
    assert "the replay ran clean" in err


async def test_one_text_message_per_json_rpc_message() -> None:
    fixture = str(DATA / "v2_session.jsonl")
    async for server in _serve(*replay_agent_cmd(Path("unused"), fixture, "--listen", "[::1]:0")):
        async with connect(server.url, compression=None) as ws:
            await ws.send(
                '{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":2,'
                '"info":{"name":"other-editor","version":"1"},"capabilities":{}}}'
            )
            reply = await asyncio.wait_for(ws.recv(), 10)
            assert isinstance(reply, str) and reply.startswith('{"jsonrpc":"2.0","id":"i",')
        code, err = await server.result()
        assert code == 1 and "never sent" in err  # the session was cut short


async def test_wrong_path_and_browser_origins_are_refused(demo_server: Server) -> None:
    with pytest.raises(InvalidStatus) as e:
        async with connect(demo_server.url.replace("/acp", "/other")):
            pass
    assert e.value.response.status_code == 404
    with pytest.raises(InvalidStatus) as e:
        async with connect(demo_server.url, origin="http://evil.example"):  # type: ignore[arg-type]
            pass
    assert e.value.response.status_code == 403


def test_listening_beyond_loopback_is_refused(demo_db: Path) -> None:
    r = subprocess.run(
        replay_agent_cmd(demo_db, "--listen", "0.0.0.0:0"), capture_output=True, text=True
    )
    assert r.returncode == 2 and "loopback" in r.stderr


async def test_a_client_answering_permission_differently_is_reported(
    demo_server: Server, tmp_path: Path
) -> None:
    client = SdkClient(tmp_path, permission="reject")
    conn = connect_to_agent(client, await create_websocket_stream(demo_server.url))
    results = await play_demo_session(conn, client, tmp_path)
    await conn.close()
    assert results[1] == "end_turn"  # the recording goes on as recorded
    code, err = await demo_server.result()
    assert code == 1
    assert (
        "the client answered session/request_permission [2] differently from the recording "
        '(result.outcome.optionId: recorded "allow", got "reject")'
    ) in err


async def test_keep_serving_replays_from_the_start_for_each_client(demo_db: Path) -> None:
    init = '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'
    async for server in _serve(
        *replay_agent_cmd(demo_db, "--listen", "127.0.0.1:0", "--keep-serving")
    ):
        for _ in range(2):
            async with connect(server.url) as ws:
                await ws.send(init)
                assert '"agentInfo"' in await asyncio.wait_for(ws.recv(), 10)
        server.proc.send_signal(2)  # SIGINT: how a person stops it
        code, err = await server.result()
        assert code == 130
        assert err.count("client connected") == 2

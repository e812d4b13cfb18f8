"""``replay agent --listen`` over Streamable HTTP: a session of the official SDK's client
and server recorded through ``acp-proxy http`` is served back to the SDK's own HTTP client
(``acp.http.create_http_stream``), over HTTP/1.1 and HTTP/2 with prior knowledge, and to
its WebSocket client on the same port, each completing the recorded session."""

from __future__ import annotations

import asyncio
import re
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from acp.ws import create_websocket_stream
from support.http import Transcript, http_session, running_http_proxy, sdk_http_server, sdk_session
from support.replay import replay_agent_cmd


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Transcript]:
    """A capture of one SDK session through ``acp-proxy http``; its workspace; what the
    client saw."""
    work = tmp_path_factory.mktemp("replay-http")
    (work / "notes.txt").write_text("remember the milk\n")
    db = work / "rec.sqlite"

    async def record() -> Transcript:
        async with sdk_http_server() as up, running_http_proxy(db, up.url) as proxy:
            return await http_session(proxy.url + "/acp", work)

    return db, work, asyncio.run(record())


class Listening:
    def __init__(self, proc: asyncio.subprocess.Process, first: str) -> None:
        self.proc = proc
        found = re.search(r" at (ws://\S+) \(Streamable HTTP: (http://\S+)\)", first)
        assert found is not None, first
        self.ws_url, self.http_url = found.group(1), found.group(2)

    async def result(self) -> tuple[int, str]:
        assert self.proc.stderr is not None
        rest = await asyncio.wait_for(self.proc.stderr.read(), 30)
        return await asyncio.wait_for(self.proc.wait(), 30), rest.decode()


async def _listen(db: Path, *extra: str) -> AsyncIterator[Listening]:
    proc = await asyncio.create_subprocess_exec(
        *replay_agent_cmd(db, "1", "--listen", "127.0.0.1:0", *extra),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    line = await asyncio.wait_for(proc.stderr.readline(), 30)
    try:
        yield Listening(proc, line.decode())
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


@pytest.mark.parametrize("http2", [False, True], ids=["http1.1", "h2c"])
async def test_sdk_http_client_completes_the_recorded_session(
    recorded: tuple[Path, Path, Transcript], http2: bool
) -> None:
    db, work, seen = recorded
    async for server in _listen(db):
        replayed = await asyncio.wait_for(http_session(server.http_url, work, http2=http2), 60)
        code, stderr = await server.result()
    assert replayed == seen
    assert code == 0, stderr
    assert "the replay ran clean" in stderr and "Acp-Connection-Id" in stderr


async def test_the_sdk_default_client_and_websocket_on_the_same_port(
    recorded: tuple[Path, Path, Transcript],
) -> None:
    from acp.http import create_http_stream

    db, work, seen = recorded
    async for server in _listen(db, "--keep-serving"):
        # the SDK's own client, as it makes itself (httpx, HTTP/2 allowed)
        assert await sdk_session(create_http_stream(server.http_url), work) == seen
        # then a WebSocket client on the same port and path, from the start again
        ws = await create_websocket_stream(server.ws_url)
        updates, stops = await sdk_session(ws, work, ("hello",))
        assert stops == ["end_turn"] and updates == seen[0][: len(updates)]
        server.proc.terminate()
        _code, stderr = await server.result()
    assert stderr.count("client connected") == 2


async def test_http_errors_as_the_sdk_server_gives_them(
    recorded: tuple[Path, Path, Transcript],
) -> None:
    db, _work, _seen = recorded
    async for server in _listen(db, "--keep-serving"):
        async with httpx.AsyncClient() as client:
            url = server.http_url
            unknown = await client.post(url, json={}, headers={"Acp-Connection-Id": "nope"})
            missing = await client.get(url, headers={"Accept": "text/event-stream"})
            not_sse = await client.get(url, headers={"Accept": "application/json"})
            unknown_get = await client.get(
                url, headers={"Accept": "text/event-stream", "Acp-Connection-Id": "nope"}
            )
            elsewhere = await client.get(url.replace("/acp", "/other"))
        server.proc.terminate()
        await server.result()
    assert (unknown.status_code, missing.status_code) == (400, 400)
    assert not_sse.status_code == 406 and elsewhere.status_code == 404
    assert unknown_get.json() == {"error": "Unknown connection id"}
    assert missing.json() == {"error": "Missing connection id"}

"""``acp-proxy ws`` relays a bounded number of connections, within a memory budget: over
either limit a client gets HTTP 503 with the reason, recorded and said on stderr."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support.proc import PROXY, peer
from support.ws import RAW, events, upstream_server
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus

MIB = 1024 * 1024


@contextlib.asynccontextmanager
async def ws_command(db: Path, *args: str) -> AsyncIterator[tuple[str, asyncio.StreamReader]]:
    """``acp-proxy ws`` as a user runs it: its URL and its stderr (after the first line)."""
    proc = await asyncio.create_subprocess_exec(
        *PROXY, "ws", "--db", str(db), "--listen", "127.0.0.1:0", *args,
        stderr=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stderr is not None
    try:
        line = (await asyncio.wait_for(proc.stderr.readline(), 30)).decode()
        yield line.split("listening on ", 1)[1].split(" ", 1)[0], proc.stderr
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 30)


async def _refused(url: str) -> InvalidStatus:
    with pytest.raises(InvalidStatus) as info:
        await connect(url + "/acp", **RAW)
    return info.value


async def test_connections_over_the_limit_get_503_and_a_slot_frees_when_one_ends(
    db: Path,
) -> None:
    async with (
        upstream_server() as up,
        ws_command(db, "--upstream", up.url, "--max-connections", "2") as (url, stderr),
    ):
        held: list[ClientConnection] = [await connect(url + "/acp", **RAW) for _ in range(2)]
        refusal = await _refused(url)
        assert refusal.response.status_code == 503
        assert b"too many connections" in refusal.response.body
        said = await asyncio.wait_for(stderr.readline(), 30)
        assert b"--max-connections" in said and b"HTTP 503" in said
        await held.pop().close()
        for _ in range(100):  # the proxy sees the close a moment later
            try:
                async with connect(url + "/acp", **RAW) as ws:
                    await ws.send("again")
                    assert await ws.recv() == "again"
                break
            except InvalidStatus:
                await asyncio.sleep(0.05)
        else:
            raise AssertionError("the slot of the closed connection was not given back")
        await held.pop().close()
    assert len(up.conns) == 3  # the refused one never reached the upstream
    refused = [d for k, d in events(db) if k == "refused"]
    assert refused and all(d["status"] == 503 for d in refused)


async def test_a_flood_spawns_no_more_agents_than_the_limit(db: Path) -> None:
    agent = peer("lifecycle_agent.py", "ignore-eof")
    async with ws_command(db, "--max-connections", "3", "--grace", "0", "--", *agent) as (
        url,
        _,
    ):

        async def attempt() -> ClientConnection | None:
            try:
                return await connect(url + "/acp", **RAW)
            except InvalidStatus as e:
                assert e.response.status_code == 503
                return None

        results = await asyncio.gather(*(attempt() for _ in range(12)))
        opened = [ws for ws in results if ws is not None]
        assert len(opened) == 3
        for ws in opened:
            await ws.close()
    kinds = [k for k, _ in events(db)]
    assert kinds.count("spawn") == 3 and kinds.count("refused") == 9


async def test_the_in_flight_budget_refuses_what_it_cannot_hold(db: Path) -> None:
    budget = ["--max-size", str(MIB), "--max-in-flight", str(5 * MIB)]  # 2 MiB each: 2 fit
    async with (
        upstream_server() as up,
        ws_command(db, "--upstream", up.url, *budget) as (url, stderr),
    ):
        held = [await connect(url + "/acp", **RAW) for _ in range(2)]
        refusal = await _refused(url)
        assert refusal.response.status_code == 503
        assert b"in-flight memory budget" in refusal.response.body
        said = await asyncio.wait_for(stderr.readline(), 30)
        assert b"--max-in-flight" in said
        for ws in held:
            await ws.close()
    (refused,) = [d for k, d in events(db) if k == "refused"]
    assert refused["status"] == 503 and "--max-in-flight" in refused["error"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-connections", "0"], b"--max-connections"),
        (["--max-size", str(MIB), "--max-in-flight", str(MIB)], b"--max-in-flight"),
    ],
)
def test_limits_that_admit_nobody_are_usage_errors(
    db: Path, args: list[str], message: bytes
) -> None:
    r = subprocess.run(
        [*PROXY, "ws", "--db", str(db), "--upstream", "ws://x/acp", *args],
        capture_output=True,
        timeout=30,
    )
    assert r.returncode == 2 and message in r.stderr and r.stderr.count(b"\n") == 1


def test_the_limits_are_in_the_help() -> None:
    r = subprocess.run([*PROXY, "ws", "-h"], capture_output=True, timeout=30, check=True)
    assert b"--max-connections" in r.stdout and b"--max-in-flight" in r.stdout

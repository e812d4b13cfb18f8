"""What a recorded handshake keeps: header values by allow-list, query values never, unless
``--keep-secrets`` (formerly ``--record-secrets``) asks for everything."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest
from support.proc import PROXY
from support.ws import RAW, events, rows, upstream_server
from websockets.asyncio.client import connect

SECRET = "s3cr3t"


async def _session(db: Path, *flags: str) -> None:
    async with upstream_server(select_subprotocol=lambda c, offered: offered[0]) as up:
        proc = await asyncio.create_subprocess_exec(
            *PROXY, "ws", "--db", str(db), "--listen", "127.0.0.1:0", "--upstream",
            up.url + f"/acp?up_sig={SECRET}", *flags, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert proc.stderr is not None
        line = (await asyncio.wait_for(proc.stderr.readline(), 30)).decode()
        url = line.split("listening on ", 1)[1].split(" ", 1)[0]
        async with connect(
            url + f"/acp?sig={SECRET}&v=1",
            additional_headers=[("X-Auth", SECRET), ("User-Agent", "tester/1")],
            subprotocols=[f"token.{SECRET}"],  # type: ignore[list-item]
            **RAW,
        ) as ws:
            await ws.send("hello")
            assert await ws.recv() == "hello"
        proc.terminate()
        assert await asyncio.wait_for(proc.wait(), 30) == 0


def _stored(db: Path) -> str:
    caps = rows(db, "SELECT listen_url, upstream_url FROM captures")
    return repr(caps) + repr(events(db))


async def test_header_and_query_values_are_stored_by_allow_list(db: Path) -> None:
    await _session(db)
    stored = _stored(db)
    assert SECRET not in stored
    (handshake,) = [d for k, d in events(db) if k == "handshake"]
    headers = dict(map(tuple, handshake["request"]["headers"]))
    assert headers["X-Auth"] == "[redacted]"
    assert headers["Sec-WebSocket-Protocol"] == "[redacted]"
    assert headers["User-Agent"] == "tester/1"  # known to hold no secret
    back = dict(map(tuple, handshake["response"]["headers"]))
    assert back["Sec-WebSocket-Protocol"] == "[redacted]"
    ((listen, upstream),) = rows(db, "SELECT listen_url, upstream_url FROM captures")
    assert listen.endswith("/acp?sig=[redacted]&v=[redacted]")
    assert upstream.endswith("/acp?sig=[redacted]&v=[redacted]")
    for args in (["captures"], ["show"], ["captures", "--json"], ["show", "--json"]):
        r = subprocess.run([*PROXY, *args, "--db", str(db)], capture_output=True, timeout=60)
        assert r.returncode == 0 and SECRET.encode() not in r.stdout + r.stderr


@pytest.mark.parametrize("flag", ["--keep-secrets", "--record-secrets"])
async def test_keep_secrets_stores_everything_as_sent(db: Path, flag: str) -> None:
    await _session(db, flag)
    (handshake,) = [d for k, d in events(db) if k == "handshake"]
    headers = dict(map(tuple, handshake["request"]["headers"]))
    assert headers["X-Auth"] == SECRET
    assert headers["Sec-WebSocket-Protocol"] == f"token.{SECRET}"
    ((listen,),) = rows(db, "SELECT listen_url FROM captures")
    assert listen.endswith(f"/acp?sig={SECRET}&v=1")


def test_the_earlier_flag_name_is_hidden() -> None:
    r = subprocess.run([*PROXY, "ws", "-h"], capture_output=True, timeout=30)
    assert b"--keep-secrets" in r.stdout and b"--record-secrets" not in r.stdout

"""Admission to ``acp-proxy ws``: our token stays ours however it is spelled, a blank token
is refused, and a request with several Origin headers is refused like any foreign origin."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from support.proc import PROXY
from support.ws import RAW, events, running_proxy, upstream_server
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from acp_proxy.relay.core.admission import Admission


@pytest.mark.parametrize("value", ["bearer t0k", "Bearer  t0k", "BEARER t0k", "Bearer t0k "])
async def test_our_token_is_never_relayed_however_spelled(db: Path, value: str) -> None:
    async with (
        upstream_server() as up,
        running_proxy(db, upstream=up.url, token="t0k") as proxy,
        connect(
            proxy.url + "/acp?x=1&alias=t0k",
            additional_headers=[("Authorization", value), ("Authorization", "Basic theirs")],
            **RAW,
        ) as ws,
    ):
        await ws.send("a")
        assert await ws.recv() == "a"
    (conn,) = up.conns
    assert conn.request.headers.get_all("Authorization") == ["Basic theirs"]
    assert conn.request.path == "/acp?x=1"
    assert b"t0k" not in str(conn.request.headers).encode()


async def test_query_token_is_consumed_under_any_name(db: Path) -> None:
    async with (
        upstream_server() as up,
        running_proxy(db, upstream=up.url, token="t0k") as proxy,
        connect(proxy.url + "/acp?token=t%30k&Token=t0k&keep=1", **RAW) as ws,
    ):
        await ws.send("a")
        assert await ws.recv() == "a"
    assert up.conns[0].request.path == "/acp?keep=1"


def test_consumed_credentials() -> None:
    a = Admission("t0k")
    for value in ("Bearer t0k", "bearer\tt0k", "t0k", "Token t0k", "Basic x, Bearer t0k"):
        assert a.consumes("authorization", value), value
    for value in ("Bearer t0kk", "Basic dDBr"):
        assert not a.consumes("Authorization", value), value
    assert not a.consumes("X-Other", "Bearer t0k")  # not a credential header: theirs
    assert a.consumes_param("anything", "t0k") and not a.consumes_param("token", "other")
    assert not Admission(None).consumes("Authorization", "Bearer t0k")


@pytest.mark.parametrize("how", ["option", "env"])
@pytest.mark.parametrize("token", ["  ", "", "two words", "tab\tbed"])
def test_blank_or_spaced_token_is_a_usage_error(db: Path, how: str, token: str) -> None:
    if how == "env" and not token:
        pytest.skip("an empty variable is an unset one")
    args = [*PROXY, "ws", "--db", str(db), "--listen", "127.0.0.1:0", "--upstream", "ws://x/a"]
    env = dict(os.environ)
    if how == "option":
        args += ["--token", token]
    else:
        env["ACP_PROXY_TOKEN"] = token
    r = subprocess.run(args, capture_output=True, timeout=30, env=env)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count(b"\n") == 1 and b"--token" in r.stderr
    assert not db.exists()  # refused before anything was opened


async def test_two_origin_headers_are_refused_and_recorded(db: Path) -> None:
    async with (
        upstream_server() as up,
        running_proxy(db, upstream=up.url, allow_origins=("https://ok.example",)) as proxy,
    ):
        with pytest.raises(InvalidStatus) as info:
            await connect(
                proxy.url + "/acp",
                additional_headers=[("Origin", "https://ok.example"), ("Origin", "https://x")],
                **RAW,
            )
        assert info.value.response.status_code == 403
    assert up.conns == []
    (refused,) = [d for k, d in events(db) if k == "refused"]
    assert refused["status"] == 403 and "Origin headers" in refused["error"]


async def test_two_upgrade_headers_are_not_a_crash(db: Path) -> None:
    import asyncio

    async with upstream_server() as up, running_proxy(db, upstream=up.url) as proxy:
        host, port = proxy.url.removeprefix("ws://").rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(
            b"GET /acp HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            b"Sec-WebSocket-Version: 13\r\n\r\n"
        )
        status = await asyncio.wait_for(reader.readline(), 30)
        writer.close()
    assert status.startswith(b"HTTP/1.1 4"), status  # the library's own refusal, not a 500
    assert up.conns == []


def test_admission_reads_plain_values_whatever_library_parsed_the_request() -> None:
    """The rules take a Caller made of a target and header pairs (websockets, h11, h2 and
    the inspector's server each hand theirs): names in any case, repeats kept."""
    from acp_proxy.relay.core.admission import Caller

    caller = Caller.of(
        "/acp?token=t0k",
        [("host", "localhost:1"), ("ORIGIN", "https://a"), ("Origin", "https://b"), ("X", "y")],
    )
    assert caller == Caller("/acp?token=t0k", ("localhost:1",), ("https://a", "https://b"))
    rules = Admission(token="t0k", allow_origins=frozenset({"https://a"}))
    assert rules.refusal(caller) == (403, "2 Origin headers (a request has at most one)")
    assert rules.refusal(Caller("/acp?token=t0k", ("127.0.0.1",))) is None
    assert rules.refusal(Caller("/acp", ("127.0.0.1",), (), ("Bearer t0k",))) is None
    assert rules.refusal(Caller("/acp", ("127.0.0.1",)))[0] == 401
    assert rules.refusal(Caller("/acp", ("evil.example",)))[0] == 421
    assert rules.refusal(Caller("/acp", ()))[0] == 421

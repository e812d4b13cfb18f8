"""The ``ws`` command as a user runs it, and the pure pieces of the upgrade policy."""

from __future__ import annotations

import asyncio
import signal
import subprocess
from pathlib import Path

import pytest
from support.proc import PROXY
from support.ws import RAW, events, rows, upstream_server
from websockets.asyncio.client import connect
from websockets.datastructures import Headers

from acp_proxy.relay.core.admission import Admission, upstream_target
from acp_proxy.transports.headers import (
    redact_headers,
    redact_url,
    relay_request_headers,
    relay_response_headers,
    without_params,
)


def test_non_loopback_without_token_refuses_to_start(db: Path) -> None:
    r = subprocess.run(
        [*PROXY, "ws", "--db", str(db), "--listen", "0.0.0.0:0", "--upstream", "ws://x/acp"],
        capture_output=True,
        timeout=30,
    )
    assert r.returncode == 2
    assert r.stdout == b""
    assert r.stderr.count(b"\n") == 1 and b"--token" in r.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--upstream", "http://x/acp"], b"ws://"),
        ([], b"either --upstream"),
        (["--upstream", "ws://x/acp", "--", "agent"], b"either --upstream"),
        (["--listen", "nonsense", "--upstream", "ws://x/"], b"HOST:PORT"),
        (["--max-size", "0", "--upstream", "ws://x/"], b"--max-size"),
    ],
)
def test_bad_arguments_are_one_line(db: Path, args: list[str], message: bytes) -> None:
    r = subprocess.run([*PROXY, "ws", "--db", str(db), *args], capture_output=True, timeout=30)
    assert r.returncode == 2
    assert message in r.stderr and r.stderr.count(b"\n") == 1


def test_help_has_an_example() -> None:
    r = subprocess.run([*PROXY, "ws", "-h"], capture_output=True, timeout=30)
    assert r.returncode == 0
    assert b"acp-proxy ws --listen 127.0.0.1:8765 --upstream" in r.stdout


async def test_ws_command_relays_records_and_stops_on_sigint(db: Path) -> None:
    async with upstream_server() as up:
        proc = await asyncio.create_subprocess_exec(
            *PROXY, "ws", "--db", str(db), "--listen", "127.0.0.1:0", "--upstream", up.url,
            stderr=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert proc.stderr is not None and proc.stdout is not None
        line = (await asyncio.wait_for(proc.stderr.readline(), 30)).decode()
        url = line.split("listening on ", 1)[1].split(" ", 1)[0]
        async with connect(url + "/acp", **RAW) as ws:
            await ws.send('{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}')
            await ws.recv()
            proc.send_signal(signal.SIGINT)
            with pytest.raises(Exception):  # noqa: B017 - closed by the proxy going away
                await asyncio.wait_for(ws.recv(), 30)
            assert ws.close_code == 1001
        assert await asyncio.wait_for(proc.wait(), 30) == 0
        assert await proc.stdout.read() == b""  # nothing on stdout, ever
        await asyncio.wait_for(up.event.wait(), 10)
    assert up.closed == [(1001, "", False)]  # mirrored upstream
    assert rows(db, "SELECT transport, message_count FROM captures") == [("ws", 2)]
    assert "handshake" in [k for k, _ in events(db)]


def test_request_headers_policy() -> None:
    h = Headers(
        [
            ("Host", "proxy:8765"),
            ("Upgrade", "websocket"),
            ("Connection", "Upgrade, X-Hop"),
            ("X-Hop", "dropped: named in Connection"),
            ("Sec-WebSocket-Key", "k"),
            ("Sec-WebSocket-Version", "13"),
            ("Sec-WebSocket-Extensions", "permessage-deflate"),
            ("Sec-WebSocket-Protocol", "acp.v1"),
            ("Authorization", "Bearer ours"),
            ("Authorization", "Basic theirs"),
            ("Cookie", "a=1"),
            ("Cookie", "b=2"),
            ("Origin", "https://ok.example"),
            ("Proxy-Authorization", "Basic x"),
        ]
    )
    ours = Admission("ours").consumes
    assert relay_request_headers(h, consumed=ours) == [
        ("Authorization", "Basic theirs"),
        ("Cookie", "a=1"),
        ("Cookie", "b=2"),
        ("Origin", "https://ok.example"),
    ]
    r = Headers([("Sec-WebSocket-Accept", "x"), ("Acp-Connection-Id", "c1"),
                 ("Set-Cookie", "s=1"), ("Upgrade", "websocket")])  # fmt: skip
    assert relay_response_headers(r) == [("Acp-Connection-Id", "c1"), ("Set-Cookie", "s=1")]


def test_redaction() -> None:
    stored = redact_headers(
        [
            ("Authorization", "Bearer abc"),
            ("Authorization", "abc def"),
            ("Cookie", "sid=1; theme=dark"),
            ("Set-Cookie", "sid=2; Path=/; HttpOnly"),
            ("X-Api-Key", "k"),
            ("X-Auth", "k"),
            ("Sec-WebSocket-Protocol", "acp, token.abc"),
            ("User-Agent", "ua"),
            ("Origin", "https://o.example"),
            ("Acp-Connection-Id", "c1"),
        ],
        keep_secrets=False,
    )
    assert stored == [
        ["Authorization", "Bearer [redacted]"],
        ["Authorization", "[redacted]"],  # no known scheme: nothing of it kept
        ["Cookie", "sid=[redacted]; theme=[redacted]"],
        ["Set-Cookie", "sid=[redacted]; Path=/; HttpOnly"],
        ["X-Api-Key", "[redacted]"],
        ["X-Auth", "[redacted]"],
        ["Sec-WebSocket-Protocol", "[redacted]"],
        ["User-Agent", "ua"],
        ["Origin", "https://o.example"],
        ["Acp-Connection-Id", "c1"],
    ]
    assert redact_headers([("Cookie", "a=1")], keep_secrets=True) == [["Cookie", "a=1"]]
    assert (
        redact_url("ws://u:p@h/acp?token=x&sig=%20y&flag&empty=#frag", keep_secrets=False)
        == "ws://[redacted]@h/acp?token=[redacted]&sig=[redacted]&flag&empty=#[redacted]"
    )
    assert redact_url("/acp?token=x", keep_secrets=True) == "/acp?token=x"


def test_query_and_path_relaying() -> None:
    ours = Admission("t").consumes_param
    assert without_params("/acp?token=t&x=1", ours) == "/acp?x=1"
    assert without_params("/acp?token=t", ours) == "/acp"
    assert without_params("/acp?token=other", ours) == "/acp?token=other"
    assert upstream_target("ws://h:1/acp", "/") == "ws://h:1/acp"
    assert upstream_target("ws://h:1/acp", "/other?q=1") == "ws://h:1/other?q=1"
    assert upstream_target("ws://h:1/acp", "/?q=1") == "ws://h:1/acp?q=1"

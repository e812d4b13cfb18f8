"""The WebSocket man in the middle on real loopback sockets: bytes, opcodes, closes, headers,
failure modes, safety refusals and many concurrent connections."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from support.ws import RAW, events, messages, rows, running_proxy, upstream_server
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed, InvalidStatus

from acp_proxy.errors import UsageError
from acp_proxy.relay.core.admission import check_listen_address
from acp_proxy.transports.websocket import WsSettings

MIB = 1024 * 1024


async def test_text_and_binary_bytes_both_ways_up_to_32_mb(db: Path) -> None:
    big_text = b'{"jsonrpc":"2.0","method":"x","params":{"s":"' + b"a" * (32 * MIB) + b'"}}'
    payloads = [
        (True, b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}'),
        (True, b""),
        (True, "héllo ✔ \u2028".encode()),
        (True, b"\xff\xfe not utf-8 \xc3"),  # invalid UTF-8 in a text message: not "fixed"
        (False, b"\x00\x01\x02binary\xff"),
        (False, os.urandom(3 * MIB)),
        (True, big_text),
        (False, os.urandom(32 * MIB)),
    ]
    async with (
        upstream_server() as up,
        running_proxy(db, upstream=up.url + "/acp") as proxy,
        connect(proxy.url + "/acp", **RAW) as ws,
    ):
        for is_text, data in payloads:
            await ws.send(data, text=is_text)
            back = await ws.recv(decode=False)
            assert back == data
        await ws.close()
    assert [d for _, d in up.received[0]] == [d for _, d in payloads]
    got = messages(db, 1)
    assert len(got) == 2 * len(payloads)
    for i, (is_text, data) in enumerate(payloads):
        for seq, direction in ((2 * i, "c2a"), (2 * i + 1, "a2c")):
            s, d, opcode, terminated, raw = got[seq]
            assert (s, d, terminated) == (seq, direction, 0)
            assert opcode == ("text" if is_text else "binary")
            assert raw == data


async def test_fragmented_message_is_reassembled(db: Path) -> None:
    async with (
        upstream_server() as up,
        running_proxy(db, upstream=up.url) as proxy,
        connect(proxy.url + "/acp", **RAW) as ws,
    ):
        await ws.send([b'{"a":', b'"split', b" \xe2\x9c", b'\x94"}'], text=True)
        assert await ws.recv(decode=False) == '{"a":"split ✔"}'.encode()
    assert up.received[0] == [("msg", '{"a":"split ✔"}'.encode())]
    assert [r[2] for r in messages(db, 1)] == ["text", "text"]


@pytest.mark.parametrize(("code", "reason"), [(1000, ""), (4001, "bye now"), (1011, "boom")])
async def test_client_close_code_and_reason_reach_upstream(
    db: Path, code: int, reason: str
) -> None:
    async with upstream_server() as up, running_proxy(db, upstream=up.url) as proxy:
        async with connect(proxy.url + "/acp", **RAW) as ws:
            await ws.send("x")
            await ws.recv()
            await ws.close(code, reason)
        await asyncio.wait_for(up.event.wait(), 10)
    assert up.closed == [(code, reason, False)]
    closes = [d for k, d in events(db, 1) if k == "close"]
    assert closes[0] == {
        "side": "client",
        "how": "close",
        "by": "peer",
        "code": code,
        "reason": reason,
    }


async def test_upstream_close_code_reaches_client(db: Path) -> None:
    async def closer(ws: ServerConnection, _up: object) -> None:
        await ws.recv()
        await ws.close(4002, "upstream says bye")

    async with (
        upstream_server(closer) as up,
        running_proxy(db, upstream=up.url) as proxy,
        connect(proxy.url + "/acp", **RAW) as ws,
    ):
        await ws.send("x")
        with pytest.raises(ConnectionClosed):
            await ws.recv()
        assert ws.close_code == 4002
        assert ws.close_reason == "upstream says bye"


async def test_close_without_status_is_relayed_as_such(db: Path) -> None:
    async def closer(ws: ServerConnection, _up: object) -> None:
        await ws.recv()
        async with ws.send_context():
            ws.protocol.send_close()  # a close frame with no code
        await ws.wait_closed()

    async with (
        upstream_server(closer) as up,
        running_proxy(db, upstream=up.url) as proxy,
        connect(proxy.url + "/acp", **RAW) as ws,
    ):
        await ws.send("x")
        with pytest.raises(ConnectionClosed) as info:
            await ws.recv()
        assert info.value.rcvd is not None
        assert info.value.rcvd.code == 1005


async def test_upstream_drop_without_close_frame_drops_the_client(db: Path) -> None:
    async def dropper(ws: ServerConnection, _up: object) -> None:
        await ws.recv()
        ws.transport.abort()

    async with (
        upstream_server(dropper) as up,
        running_proxy(db, upstream=up.url) as proxy,
        connect(proxy.url + "/acp", **RAW) as ws,
    ):
        await ws.send("x")
        with pytest.raises(ConnectionClosed) as info:
            await ws.recv()
        assert info.value.rcvd is None  # no close frame: 1006 for the client too
        assert ws.close_code == 1006
    closes = [d for k, d in events(db, 1) if k == "close"]
    assert closes[0]["side"] == "upstream" and closes[0]["code"] == 1006


async def test_client_drop_closes_upstream(db: Path) -> None:
    async with upstream_server() as up, running_proxy(db, upstream=up.url) as proxy:
        ws = await connect(proxy.url + "/acp", **RAW)
        await ws.send("x")
        await ws.recv()
        ws.transport.abort()
        await asyncio.wait_for(up.event.wait(), 10)
    assert up.closed == [(None, None, True)]  # the upstream sees the drop (1006) too


async def test_upgrade_headers_path_query_relayed_and_101_headers_back(db: Path) -> None:
    seen = {}

    async def upstream_response(conn: ServerConnection, request: object, response: object) -> None:
        from websockets.http11 import Request, Response

        assert isinstance(request, Request) and isinstance(response, Response)
        seen["path"] = request.path
        seen["headers"] = list(request.headers.raw_items())
        response.headers["Acp-Connection-Id"] = "conn-123"
        response.headers["Set-Cookie"] = "affinity=node7; Path=/"
        response.headers["Set-Cookie"] = "other=1"

    async with (
        upstream_server(
            process_response=upstream_response,
            select_subprotocol=lambda c, offered: "acp.v1" if "acp.v1" in offered else None,
        ) as up,
        running_proxy(db, upstream=up.url + "/acp") as proxy,
        connect(
            proxy.url + "/acp?session=abc&x=%20y",
            additional_headers=[
                ("Authorization", "Bearer upstream-secret"),
                ("Cookie", "affinity=node7; theme=dark"),
                ("X-Custom", "kept"),
            ],
            subprotocols=["acp.v2", "acp.v1"],
            **RAW,
        ) as ws,
    ):
        assert ws.subprotocol == "acp.v1"
        assert ws.response.headers["Acp-Connection-Id"] == "conn-123"
        assert ws.response.headers.get_all("Set-Cookie") == [
            "affinity=node7; Path=/",
            "other=1",
        ]
        assert "Sec-WebSocket-Extensions" not in ws.response.headers
    assert seen["path"] == "/acp?session=abc&x=%20y"
    sent = dict(seen["headers"])
    assert sent["Authorization"] == "Bearer upstream-secret"
    assert sent["Cookie"] == "affinity=node7; theme=dark"
    assert sent["X-Custom"] == "kept"
    assert sent["Sec-WebSocket-Protocol"] == "acp.v2, acp.v1"
    assert "Sec-WebSocket-Extensions" not in sent  # no compression negotiated on our leg
    assert "User-Agent" in sent  # the client's own, not one of ours
    (handshake,) = [d for k, d in events(db, 1) if k == "handshake"]
    stored = dict(map(tuple, handshake["request"]["headers"]))
    assert stored["Authorization"] == "Bearer [redacted]"
    assert stored["Cookie"] == "affinity=[redacted]; theme=[redacted]"
    back = [v for n, v in handshake["response"]["headers"] if n == "Set-Cookie"]
    assert back == ["affinity=[redacted]; Path=/", "other=[redacted]"]
    assert handshake["subprotocol"] == "[redacted]"  # a Sec-WebSocket-Protocol value
    (url,) = rows(db, "SELECT upstream_url FROM captures")
    assert url == (up.url + "/acp?session=[redacted]&x=[redacted]",)


async def test_no_subprotocol_invented(db: Path) -> None:
    async with (
        upstream_server() as up,
        running_proxy(db, upstream=up.url) as proxy,
        connect(proxy.url + "/acp", subprotocols=["acp"], **RAW) as ws,
    ):
        assert ws.subprotocol is None
        assert "Sec-WebSocket-Protocol" not in ws.response.headers


async def test_upstream_unreachable_is_a_502_with_the_reason(
    db: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    async with upstream_server() as up:
        dead = up.url
    async with running_proxy(db, upstream=dead + "/acp") as proxy:
        with pytest.raises(InvalidStatus) as info:
            await connect(proxy.url + "/acp", **RAW)
        assert info.value.response.status_code == 502
        assert b"unreachable" in info.value.response.body
    (failure,) = [d for k, d in events(db, 1) if k == "upstream_failed"]
    assert "ConnectionRefusedError" in failure["error"] or "Errno 111" in failure["error"]
    assert "unreachable" in capfd.readouterr().err


async def test_upstream_http_refusal_is_relayed(db: Path) -> None:
    async def deny(conn: ServerConnection, request: object) -> object:
        r = conn.respond(401, "no entry\n")
        r.headers["WWW-Authenticate"] = "Bearer"
        return r

    async with (
        upstream_server(process_request=deny) as up,
        running_proxy(db, upstream=up.url) as proxy,
    ):
        with pytest.raises(InvalidStatus) as info:
            await connect(proxy.url + "/acp", **RAW)
        assert info.value.response.status_code == 401
        assert info.value.response.headers["WWW-Authenticate"] == "Bearer"
        assert info.value.response.body == b"no entry\n"


async def test_browser_origin_refused_unless_allowed(db: Path) -> None:
    async with (
        upstream_server() as up,
        running_proxy(db, upstream=up.url, allow_origins=("https://ok.example",)) as proxy,
    ):
        with pytest.raises(InvalidStatus) as info:
            await connect(proxy.url + "/acp", origin="https://evil.example", **RAW)
        assert info.value.response.status_code == 403
        async with connect(proxy.url + "/acp", origin="https://ok.example", **RAW) as ws:
            await ws.send("fine")
            assert await ws.recv() == "fine"
    assert len(up.conns) == 1  # the refused one never reached the upstream
    refused = [d for k, d in events(db) if k == "refused"]
    assert refused[0]["status"] == 403


async def test_token_required_and_consumed(db: Path) -> None:
    async with upstream_server() as up, running_proxy(db, upstream=up.url, token="t0k") as proxy:
        for bad in ({}, {"additional_headers": {"Authorization": "Bearer nope"}}):
            with pytest.raises(InvalidStatus) as info:
                await connect(proxy.url + "/acp", **bad, **RAW)  # type: ignore[arg-type]
            assert info.value.response.status_code == 401
        async with connect(
            proxy.url + "/acp", additional_headers={"Authorization": "Bearer t0k"}, **RAW
        ) as ws:
            await ws.send("a")
            assert await ws.recv() == "a"
        async with connect(proxy.url + "/acp?token=t0k&keep=1", **RAW) as ws:
            await ws.send("b")
            assert await ws.recv() == "b"
    first, second = up.conns
    assert "Authorization" not in first.request.headers  # ours, not the upstream's
    assert second.request.path == "/acp?keep=1"
    stored = rows(db, "SELECT listen_url FROM captures WHERE upstream_url IS NOT NULL")
    assert any("token=[redacted]" in u for (u,) in stored)


def test_non_loopback_listener_needs_a_token() -> None:
    with pytest.raises(UsageError, match="--token"):
        check_listen_address("0.0.0.0", None)
    check_listen_address("0.0.0.0", "secret")
    for host in ("127.0.0.1", "::1", "localhost", "127.0.0.2"):
        check_listen_address(host, None)


async def test_message_over_max_size_closes_1009_on_both_legs(db: Path) -> None:
    settings = WsSettings(max_size=1024)
    async with (
        upstream_server() as up,
        running_proxy(db, upstream=up.url, settings=settings) as proxy,
    ):
        async with connect(proxy.url + "/acp", **RAW) as ws:
            await ws.send(b"x" * 2048)
            with pytest.raises(ConnectionClosed):
                await ws.recv()
            assert ws.close_code == 1009
        await asyncio.wait_for(up.event.wait(), 10)
    assert up.closed[0][0] == 1009


async def test_slow_upstream_pushes_back_on_the_client(db: Path) -> None:
    release = asyncio.Event()

    async def sleeper(ws: ServerConnection, _up: object) -> None:
        await release.wait()  # never reads while the client floods
        ws.transport.abort()

    async with (
        upstream_server(sleeper, max_queue=1) as up,
        running_proxy(db, upstream=up.url, settings=WsSettings(max_queue=2)) as proxy,
    ):
        ws = await connect(proxy.url + "/acp", **RAW)
        chunk = b"y" * MIB
        sent = 0

        async def flood() -> None:
            nonlocal sent
            for _ in range(512):
                await ws.send(chunk)
                sent += 1

        with pytest.raises(TimeoutError):
            await asyncio.wait_for(flood(), 2)  # blocked: nothing buffers 512 MiB
        ws.transport.abort()
        release.set()
    assert sent < 64  # a few MiB in socket buffers and the bounded queues, then backpressure


async def test_fifty_concurrent_connections_each_its_own_capture(db: Path) -> None:
    small = WsSettings(max_size=MIB)  # 60 × 2 MiB committed: within the in-flight budget
    async with (
        upstream_server() as up,
        running_proxy(db, upstream=up.url, settings=small) as proxy,
    ):

        async def one(i: int) -> None:
            async with connect(proxy.url + f"/acp/{i}", **RAW) as ws:
                for j in range(5):
                    msg = f'{{"jsonrpc":"2.0","id":{j},"method":"m","params":{{"n":{i}}}}}'
                    await ws.send(msg)
                    assert await ws.recv() == msg

        await asyncio.gather(*(one(i) for i in range(60)))
    caps = rows(db, "SELECT id, listen_url, message_count, ended_at FROM captures")
    assert len(caps) == 60
    assert all(count == 10 and ended for _, _, count, ended in caps)
    assert len({u for _, u, _, _ in caps}) == 60
    for cid, url, _, _ in caps:
        n = url.rsplit("/", 1)[1]
        assert all(f'"n":{n}}}'.encode() in raw for *_, raw in messages(db, cid))


async def test_client_leaving_during_a_slow_upstream_handshake_closes_upstream(
    db: Path,
) -> None:
    async def slow(conn: ServerConnection, request: object) -> None:
        await asyncio.sleep(0.5)

    async with (
        upstream_server(process_request=slow) as up,
        running_proxy(db, upstream=up.url) as proxy,
    ):
        with pytest.raises(TimeoutError):
            await connect(proxy.url + "/acp", open_timeout=0.1, **RAW)
        await asyncio.wait_for(up.event.wait(), 10)  # the upstream leg is closed, not leaked
        for _ in range(200):
            if rows(db, "SELECT ended_at FROM captures")[0][0]:
                break
            await asyncio.sleep(0.02)
    assert up.closed == [(1001, "", False)]
    assert "abandoned" in [k for k, _ in events(db, 1)]
    assert rows(db, "SELECT message_count FROM captures WHERE ended_at IS NOT NULL") == [(0,)]


async def test_a_burst_of_small_messages_keeps_order_bytes_and_opcodes(db: Path) -> None:
    # many messages per network read take the batched lane; a fragmented message among
    # them takes the slow path; neither may overtake the other, in either direction
    sent: list[tuple[bool, bytes]] = []
    for i in range(3000):
        if i % 7 == 0:
            sent.append((False, os.urandom(i % 50)))
        else:
            sent.append((True, b'{"jsonrpc":"2.0","method":"n","params":{"i":%d}}' % i))
    async with (
        upstream_server() as up,
        running_proxy(db, upstream=up.url) as proxy,
        connect(proxy.url + "/acp", **RAW) as ws,
    ):
        for i, (is_text, data) in enumerate(sent):
            if i == 1500:
                await ws.send([b'{"frag', b'mented":', b"true}"], text=True)
            await ws.send(data, text=is_text)
        expected = [*sent[:1500], (True, b'{"fragmented":true}'), *sent[1500:]]
        back = [await ws.recv(decode=False) for _ in expected]
        await ws.close()
    assert back == [d for _, d in expected]
    assert [d for _, d in up.received[0]] == [d for _, d in expected]
    got = messages(db, 1)
    c2a = [(opcode, raw) for _, d, opcode, _, raw in got if d == "c2a"]
    a2c = [(opcode, raw) for _, d, opcode, _, raw in got if d == "a2c"]
    want = [("text" if t else "binary", d) for t, d in expected]
    assert c2a == want and a2c == want
    assert [s for s, *_ in got] == list(range(len(got)))

"""``acp-proxy http`` between raw peers: hostile bodies and event streams relayed exactly
and recorded exactly, and the failure modes (upstream down, a stream cut mid-event, the
client leaving mid-stream, a body over the limit, refused requests)."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import urllib.parse
from typing import Any

import h11
import httpx
import pytest
from support.http import chunked, raw_upstream, rebuild_stream, running_http_proxy
from support.ports import refusing_port
from support.ws import events, rows

from acp_proxy.transports.websocket import WsSettings

SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    b"X-Trace: a\r\nTransfer-Encoding: chunked\r\n\r\n"
)


async def exchange(
    url: str,
    method: bytes,
    headers: list[tuple[bytes, bytes]],
    body: bytes = b"",
    *,
    read_head_only: bool = False,
) -> tuple[int, list[tuple[bytes, bytes]], bytes, bool]:
    """One request on a raw socket; the status, headers, body bytes and whether the body
    was complete."""
    u = urllib.parse.urlsplit(url)
    reader, writer = await asyncio.open_connection(u.hostname, u.port)
    conn = h11.Connection(h11.CLIENT)
    framing = [(b"Content-Length", b"%d" % len(body))] if body or method == b"POST" else []
    req = h11.Request(
        method=method,
        target=u.path.encode(),
        headers=[(b"Host", u.netloc.encode()), *headers, *framing],
    )
    writer.write(conn.send(req) + conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage()))
    status, got, data, complete = 0, [], bytearray(), False
    try:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await reader.read(65536))
                continue
            if isinstance(event, h11.Response):
                status, got = event.status_code, list(event.headers.raw_items())
                if read_head_only:
                    break
            elif isinstance(event, h11.Data):
                data += event.data
            elif isinstance(event, h11.EndOfMessage):
                complete = True
                break
    except h11.RemoteProtocolError:
        pass
    writer.close()
    return status, got, bytes(data), complete


def a2c_rows(db: Any, capture: int) -> list[tuple[int, str | None, bytes]]:
    got = rows(
        db,
        "SELECT opcode, raw FROM messages WHERE capture_id = ? AND direction = 'a2c' ORDER BY seq",
        capture,
    )
    return [(i, op, bytes(raw)) for i, (op, raw) in enumerate(got)]


HOSTILE = [
    b"\xff\xfe not json at all \x00\x1b[2J",
    b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":123456789012345678901234567890}}',
    b'[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":"b","method":"c"}]',
    b'{"a":\r\n 1}\r\n\r\n',
    b"x" * (3 * 1024 * 1024 + 7),
]


@pytest.mark.parametrize("body", HOSTILE, ids=["binary", "bigint", "batch", "crlf", "huge"])
async def test_hostile_post_bodies_relayed_and_recorded_exactly(db: Any, body: bytes) -> None:
    def reply(method: bytes, target: bytes, headers: Any, got: bytes) -> list[bytes | None]:
        return [
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nAcp-Connection-Id: c1\r\n"
            b"Content-Length: %d\r\n\r\n" % len(got),
            got,
        ]

    async with raw_upstream(reply) as up, running_http_proxy(db, up.url) as proxy:
        status, headers, echoed, complete = await exchange(
            proxy.url + "/acp", b"POST", [(b"Content-Type", b"application/json")], body
        )
    assert (status, complete) == (200, True)
    assert up.requests[0][3] == body
    assert echoed == body
    assert (b"Acp-Connection-Id", b"c1") in headers
    recorded = rows(db, "SELECT direction, raw FROM messages ORDER BY seq")
    assert [(d, bytes(r)) for d, r in recorded] == [("c2a", body), ("a2c", body)]


async def test_event_stream_relayed_and_rebuilt_byte_for_byte(db: Any) -> None:
    stream = [
        b": keepalive\n\n",
        b'data: {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s"}}\n\n',
        b"id: 7\nretry: 1500\nevent: message\n",
        b'data: {"jsonrpc":"2.0","id":1,"result":{}}\n\n',
        b'data: {"jsonrpc":"2.0",\ndata: "method":"two lines"}\r\n\r\n',
        b"data: \xff\xfe invalid utf-8\r",
        b'\r: comment only\r\rdata: {"split":',
        b"true}\n\n",
        b": bye\n\n",
    ]

    def reply(method: bytes, *_: Any) -> list[bytes | None]:
        return [SSE_HEAD, *chunked(*stream), b"0\r\n\r\n"]

    async with raw_upstream(reply) as up, running_http_proxy(db, up.url) as proxy:
        status, headers, got, complete = await exchange(
            proxy.url + "/acp",
            b"GET",
            [(b"Accept", b"text/event-stream"), (b"Acp-Connection-Id", b"c9")],
        )
    assert (status, complete) == (200, True)
    assert got == b"".join(stream)
    assert [(n, v) for n, v in headers if n.lower() != b"transfer-encoding"] == [
        (b"Content-Type", b"text/event-stream"),
        (b"Cache-Control", b"no-cache"),
        (b"X-Trace", b"a"),
    ]
    assert up.requests[0][0] == b"GET"
    messages = a2c_rows(db, 1)
    assert [raw for _, _, raw in messages] == [
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s"}}',
        b'{"jsonrpc":"2.0","id":1,"result":{}}',
        b'{"jsonrpc":"2.0",\n"method":"two lines"}',
        b"\xff\xfe invalid utf-8",
        b'{"split":true}',
    ]
    assert rebuild_stream(messages, events(db, 1)) == b"".join(stream)
    (end,) = [d for k, d in events(db, 1) if k == "stream_end"]
    assert (end["how"], end["stream"], end["bytes"]) == ("end", "connection", len(got))


async def test_upstream_down_is_a_502_and_recorded(db: Any) -> None:
    init = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}'
    json_type = {"Content-Type": "application/json"}
    with refusing_port() as port:
        upstream = f"http://127.0.0.1:{port}/acp"
        async with running_http_proxy(db, upstream) as proxy, httpx.AsyncClient() as client:
            r = await client.post(proxy.url + "/acp", content=init, headers=json_type)
    assert r.status_code == 502
    assert "unreachable" in r.text and "ConnectionRefusedError" in r.text
    kinds = [k for k, _ in events(db, 1)]
    assert "upstream_failed" in kinds
    (failed,) = [d for k, d in events(db, 1) if k == "upstream_failed"]
    assert failed["status"] == 502 and failed["request"]["method"] == "POST"
    assert rows(db, "SELECT direction, method FROM messages") == [("c2a", "initialize")]
    assert rows(db, "SELECT transport, ended_at IS NOT NULL FROM captures") == [("http", 1)]


async def test_upstream_cutting_a_stream_mid_event(db: Any) -> None:
    def reply(*_: Any) -> list[bytes | None]:
        return [SSE_HEAD, *chunked(b'data: {"whole":1}\n\n', b'data: {"cut'), None]

    async with raw_upstream(reply) as up, running_http_proxy(db, up.url) as proxy:
        status, _h, got, complete = await exchange(
            proxy.url + "/acp", b"GET", [(b"Acp-Connection-Id", b"c1")]
        )
    assert status == 200 and not complete  # the client sees the stream cut, as we did
    assert got == b'data: {"whole":1}\n\ndata: {"cut'
    assert [raw for _, _, raw in a2c_rows(db, 1)] == [b'{"whole":1}']
    (end,) = [d for k, d in events(db, 1) if k == "stream_end"]
    assert end["how"] == "drop" and end["incomplete"] == {"raw": 'data: {"cut'}


async def test_client_leaving_mid_stream_closes_the_upstream_stream(db: Any) -> None:
    def reply(*_: Any) -> list[bytes | None]:
        return [SSE_HEAD, *chunked(b": hello\n\n")]  # then nothing: an open stream

    async with raw_upstream(reply) as up, running_http_proxy(db, up.url) as proxy:
        status, *_ = await exchange(
            proxy.url + "/acp", b"GET", [(b"Acp-Connection-Id", b"c1")], read_head_only=True
        )
        assert status == 200
        await asyncio.wait_for(up.eof.wait(), 30)  # the upstream saw its stream go away
    (end,) = [d for k, d in events(db, 1) if k == "stream_end"]
    assert (end["how"], end["by"]) == ("client_gone", "proxy")


async def test_body_over_max_size_is_413_and_not_relayed(db: Any) -> None:
    async with (
        raw_upstream(lambda *_: []) as up,
        running_http_proxy(db, up.url, settings=WsSettings(max_size=1000)) as proxy,
    ):
        status, _h, body, _c = await exchange(
            proxy.url + "/acp", b"POST", [(b"Content-Type", b"application/json")], b"x" * 5000
        )
    assert status == 413 and b"--max-size" in body
    assert up.requests == []
    (big,) = [d for k, d in events(db, 1) if k == "too_big"]
    assert big["size"] == 5000 and big["limit"] == 1000
    assert rows(db, "SELECT COUNT(*) FROM messages") == [(0,)]


async def test_token_and_origin(db: Any) -> None:
    def reply(*_: Any) -> list[bytes | None]:
        return [b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"]

    async with raw_upstream(reply) as up, running_http_proxy(db, up.url, token="s3cret") as proxy:
        url = proxy.url + "/acp"
        assert (await exchange(url, b"POST", [], b"{}"))[0] == 401
        bad_origin = [(b"Authorization", b"Bearer s3cret"), (b"Origin", b"https://evil.example")]
        assert (await exchange(url, b"POST", bad_origin, b"{}"))[0] == 403
        ok = [(b"Authorization", b"bearer  s3cret"), (b"X-Other", b"kept")]
        assert (await exchange(url, b"POST", ok, b"{}"))[0] == 202
    assert len(up.requests) == 1
    names = [n.lower() for n, _ in up.requests[0][2]]
    assert b"authorization" not in names and b"x-other" in names
    refused = [d["status"] for k, d in events(db) if k == "refused"]
    assert refused == [401, 403]
    stored = rows(db, "SELECT detail FROM events")
    assert not any("s3cret" in d for (d,) in stored)


async def test_delete_ends_the_capture_and_ids_route_requests(db: Any) -> None:
    def reply(method: bytes, target: bytes, headers: Any, got: bytes) -> list[bytes | None]:
        if b"initialize" in got:
            body = b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}'
            return [
                b"HTTP/1.1 200 OK\r\nAcp-Connection-Id: c1\r\nContent-Length: %d\r\n\r\n"
                % len(body),
                body,
            ]
        return [b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"]

    init = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'
    async with raw_upstream(reply) as up, running_http_proxy(db, up.url) as proxy:
        url = proxy.url + "/acp"
        assert (await exchange(url, b"POST", [], init))[0] == 200
        note = b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}'
        assert (await exchange(url, b"POST", [(b"Acp-Connection-Id", b"c1")], note))[0] == 202
        assert (await exchange(url, b"DELETE", [(b"Acp-Connection-Id", b"c1")]))[0] == 202
        for _ in range(600):  # the capture ends while the listener still runs
            with contextlib.suppress(sqlite3.OperationalError):  # (not created by us: 0600)
                if db.exists() and rows(db, "SELECT COUNT(ended_at) FROM captures") == [(1,)]:
                    break
            await asyncio.sleep(0.05)
        assert rows(db, "SELECT COUNT(*), COUNT(ended_at) FROM captures") == [(1, 1)]
    got = rows(db, "SELECT direction, kind, method FROM messages ORDER BY seq")
    assert got == [
        ("c2a", "request", "initialize"),
        ("a2c", "response", "initialize"),
        ("c2a", "notification", "session/cancel"),
    ]
    assert ("connection", {"connection_id": "c1"}) in events(db, 1)


async def test_stopping_the_listener_mid_stream_is_recorded(db: Any) -> None:
    def reply(*_: Any) -> list[bytes | None]:
        return [SSE_HEAD, *chunked(b'data: {"a":1}\n\n')]

    async with raw_upstream(reply) as up:
        async with running_http_proxy(db, up.url) as proxy:
            u = urllib.parse.urlsplit(proxy.url)
            reader, writer = await asyncio.open_connection(u.hostname, u.port)
            writer.write(b"GET /acp HTTP/1.1\r\nHost: localhost\r\nAcp-Connection-Id: c1\r\n\r\n")
            got = b""
            while b'{"a":1}' not in got:
                more = await asyncio.wait_for(reader.read(65536), 30)
                assert more, got
                got += more
        rest = await asyncio.wait_for(reader.read(), 30)  # the stream is cut, not finished
        assert b"0\r\n\r\n" not in rest
        writer.close()
    (end,) = [d for k, d in events(db, 1) if k == "stream_end"]
    assert (end["how"], end["by"], end["messages"]) == ("shutdown", "proxy", [0])
    assert rows(db, "SELECT COUNT(ended_at) FROM captures") == [(1,)]

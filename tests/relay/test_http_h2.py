"""``acp-proxy http`` over HTTP/2 cleartext (h2c): the official SDK's client (on httpx,
HTTP/2 with prior knowledge) and server (under Hypercorn) through the proxy, with HTTP/2
on both legs and mixed; the ``Upgrade: h2c`` dance; the failure modes of a stream (the
upstream down, a stream reset by either side mid-event, a body over the limit); and flow
control holding a reader that does not read to a bounded number of bytes."""

from __future__ import annotations

import asyncio
import urllib.parse
from pathlib import Path
from typing import Any

import h2.config
import h2.connection
import h2.events
import pytest
from support.h2peers import H2Client, h2_upstream
from support.http import (
    TeeTransport,
    check_sdk_capture,
    chunked,
    http_session,
    raw_upstream,
    rebuild_stream,
    running_http_proxy,
    sdk_http_server,
)
from support.ports import refusing_port
from support.ws import events, rows

from acp_proxy.transports.http.h2base import STREAM_WINDOW
from acp_proxy.transports.websocket import WsSettings

SSE = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
GET_STREAM = [(b"accept", b"text/event-stream"), (b"acp-connection-id", b"c1")]


def a2c(db: Path, capture: int = 1) -> list[tuple[int, str | None, bytes]]:
    got = rows(
        db,
        "SELECT opcode, raw FROM messages WHERE capture_id = ? AND direction = 'a2c' ORDER BY seq",
        capture,
    )
    return [(i, op, bytes(raw)) for i, (op, raw) in enumerate(got)]


@pytest.mark.parametrize(
    ("client_h2", "mode", "upstream_version"),
    [(True, "auto", "2"), (True, "never", "1.1"), (False, "always", "2")],
    ids=["h2c-both-legs", "h2c-client-h1-upstream", "h1-client-h2c-upstream"],
)
async def test_sdk_session_over_h2c(
    tmp_path: Path, db: Path, client_h2: bool, mode: str, upstream_version: str
) -> None:
    (tmp_path / "notes.txt").write_text("remember the milk\n")
    async with sdk_http_server() as up:
        direct = await http_session(up.url, tmp_path, http2=client_h2)
        up.sent.clear()
        up.requests.clear()
        up.versions.clear()
        up.clients.clear()
        tee = TeeTransport(http2=client_h2)
        async with running_http_proxy(db, up.url, upstream_http2=mode) as proxy:
            relayed = await http_session(proxy.url + "/acp", tmp_path, tee)
    assert relayed == direct
    assert direct[1] == ["end_turn", "end_turn"]
    assert set(tee.versions) == {"HTTP/2" if client_h2 else "HTTP/1.1"}
    assert set(up.versions) == {upstream_version}
    if client_h2 and upstream_version == "2":  # side by side on one connection each way
        assert len(up.clients) == 1
    elif client_h2:  # one request at a time per HTTP/1.1 connection: each stream holds one
        assert len(up.clients) >= 3
    assert len(rows(db, "SELECT id FROM captures")) == 1
    check_sdk_capture(db, 1)
    streams = {k: bytes(v) for k, v in up.sent.items()}
    assert len(streams) == 2
    assert {k: bytes(v) for k, v in tee.received.items()} == streams
    posted = [body for method, _h, body in up.requests if method == "POST"]
    c2a = rows(db, "SELECT raw FROM messages WHERE direction = 'c2a' ORDER BY seq")
    assert [bytes(r) for (r,) in c2a] == posted
    exchanges = [d for k, d in events(db, 1) if k == "http"]
    client_version = "2" if client_h2 else "1.1"
    assert {d["request"]["version"] for d in exchanges} == {client_version}
    assert {d["response"]["version"] for d in exchanges} == {upstream_version}
    assert sorted(d["stream"] for d in exchanges if "stream" in d) == ["connection", "session"]
    ends = [d for k, d in events(db, 1) if k == "stream_end"]
    assert len(ends) == 2


async def test_upgrade_h2c_then_streams_on_the_same_connection(db: Path) -> None:
    body = b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}'

    def reply(method: bytes, *_: Any) -> list[bytes | None]:
        if method == b"GET":
            return [
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 15"
                b'\r\nConnection: close\r\n\r\ndata: {"a":1}\n\n'
            ]  # (this upstream answers one request per connection)
        return [b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body), body]

    async with raw_upstream(reply) as up, running_http_proxy(db, up.url) as proxy:
        u = urllib.parse.urlsplit(proxy.url)
        reader, writer = await asyncio.open_connection(u.hostname, u.port)
        config = h2.config.H2Configuration(client_side=True, header_encoding=None)
        conn = h2.connection.H2Connection(config=config)
        settings = conn.initiate_upgrade_connection()
        assert settings is not None
        writer.write(
            b"GET /acp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n"
            b"Acp-Connection-Id: c1\r\nConnection: Upgrade, HTTP2-Settings\r\n"
            b"Upgrade: h2c\r\nHTTP2-Settings: %s\r\n\r\n" % (u.netloc.encode(), settings)
        )
        got = b""
        while b"\r\n\r\n" not in got:
            got += await reader.read(65536)
        head, _, rest = got.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 101 ")
        writer.write(conn.data_to_send())  # the client's preface and settings
        answers: dict[int, dict[str, Any]] = {1: {"body": b""}}
        post = None
        while True:
            for event in conn.receive_data(rest):
                a = answers.get(getattr(event, "stream_id", 0) or 0)
                if isinstance(event, h2.events.ResponseReceived) and a is not None:
                    a["status"] = dict(event.headers)[b":status"]
                elif isinstance(event, h2.events.DataReceived) and a is not None:
                    a["body"] += event.data
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, h2.events.StreamEnded) and a is not None:
                    a["ended"] = True
            if post is not None and all(a.get("ended") for a in answers.values()):
                break
            if post is None and answers[1].get("ended"):
                post = conn.get_next_available_stream_id()
                answers[post] = {"body": b""}
                conn.send_headers(
                    post,
                    [(b":method", b"POST"), (b":scheme", b"http"), (b":path", b"/acp"),
                     (b":authority", u.netloc.encode()), (b"content-type", b"application/json")],
                )  # fmt: skip
                conn.send_data(post, b'{"jsonrpc":"2.0","id":0,"method":"initialize"}', True)
            writer.write(conn.data_to_send())
            rest = await asyncio.wait_for(reader.read(65536), 30)
            assert rest, "the proxy closed the connection"
        writer.close()
    assert answers[1] == {"body": b'data: {"a":1}\n\n', "status": b"200", "ended": True}
    assert answers[post]["status"] == b"200" and answers[post]["body"] == body
    names = [n.lower() for n in (h for _m, _t, hs, _b in up.requests for h, _v in hs)]
    assert b"upgrade" not in names and b"http2-settings" not in names
    versions = [d["request"]["version"] for k, d in events(db) if k == "http"]
    assert versions == ["2", "2"]


async def test_upstream_down_is_a_502_on_the_stream(db: Path) -> None:
    with refusing_port() as port:
        async with running_http_proxy(db, f"http://127.0.0.1:{port}/acp") as proxy:
            client = await H2Client.connect(proxy.url)
            try:
                for _ in range(2):  # and the connection goes on after it
                    a = await client.exchange(b"POST", b"/acp", [], b'{"jsonrpc":"2.0"}')
                    assert a.status == 502 and b"unreachable" in a.body and a.ended
            finally:
                await client.close()
    failed = [d for k, d in events(db) if k == "upstream_failed"]
    assert len(failed) == 2 and failed[0]["request"]["version"] == "2"


async def test_upstream_resetting_a_stream_mid_event(db: Path) -> None:
    def reply(*_: Any) -> list[tuple[Any, ...]]:
        return [("head", 200, SSE), ("data", b'data: {"whole":1}\n\ndata: {"cut'), ("reset", 2)]

    async with h2_upstream(reply) as up, running_http_proxy(db, up.url) as proxy:
        client = await H2Client.connect(proxy.url)
        try:
            a = await client.exchange(b"GET", b"/acp", GET_STREAM)
            after = await client.exchange(b"GET", b"/acp", GET_STREAM)  # the connection lives
        finally:
            await client.close()
    assert a.status == 200 and a.reset is not None and not a.ended
    assert bytes(a.body) == b'data: {"whole":1}\n\ndata: {"cut'
    assert after.status == 200
    assert [raw for _, _, raw in a2c(db)][:1] == [b'{"whole":1}']
    end = next(d for k, d in events(db, 1) if k == "stream_end")
    assert end["how"] == "drop" and end["incomplete"] == {"raw": 'data: {"cut'}
    assert "stream reset (INTERNAL_ERROR)" in end["error"]


async def test_client_resetting_a_stream(db: Path) -> None:
    def reply(headers: Any, body: bytes) -> list[tuple[Any, ...]]:
        if dict(headers)[b":method"] == b"POST":
            return [("head", 202, []), ("end",)]
        return [("head", 200, SSE), ("data", b": hello\n\n"), ("hold",)]

    async with h2_upstream(reply) as up, running_http_proxy(db, up.url) as proxy:
        client = await H2Client.connect(proxy.url)
        try:
            sid = client.request(b"GET", b"/acp", GET_STREAM)
            await client.until(lambda: bytes(client.answers[sid].body) == b": hello\n\n")
            client.reset(sid)
            await asyncio.wait_for(up.reset.wait(), 30)  # the upstream's stream is reset too
            note = b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}'
            a = await client.exchange(b"POST", b"/acp", [(b"acp-connection-id", b"c1")], note)
            assert a.status == 202  # and the other streams go on
        finally:
            await client.close()
    end = next(d for k, d in events(db, 1) if k == "stream_end")
    assert (end["how"], end["by"]) == ("client_gone", "proxy")
    assert rebuild_stream(a2c(db), events(db, 1)) == b": hello\n\n"


async def test_body_over_max_size_is_413_on_the_stream(db: Path) -> None:
    settings = WsSettings(max_size=1000)
    async with (
        h2_upstream(lambda *_: [("head", 202, []), ("end",)]) as up,
        running_http_proxy(db, up.url, settings=settings) as proxy,
    ):
        client = await H2Client.connect(proxy.url)
        try:
            big = await client.exchange(b"POST", b"/acp", [], b"x" * 5000)
            small = await client.exchange(b"POST", b"/acp", [], b"{}")
        finally:
            await client.close()
    assert big.status == 413 and b"--max-size" in big.body
    assert small.status == 202
    assert [body for _h, body in up.requests] == [b"{}"]
    (too_big,) = [d for k, d in events(db) if k == "too_big"]
    assert too_big["size"] > 1000 and too_big["limit"] == 1000
    assert rows(db, "SELECT raw FROM messages") == [(b"{}",)]


async def test_a_reader_that_does_not_read_holds_the_upstream_back(db: Path) -> None:
    total = 8 * 1024 * 1024

    def reply(headers: Any, body: bytes) -> list[tuple[Any, ...]]:
        if dict(headers)[b":method"] == b"POST":
            return [("head", 202, []), ("end",)]
        return [("head", 200, SSE), ("flood", total), ("end",)]

    async with h2_upstream(reply) as up, running_http_proxy(db, up.url) as proxy:
        client = await H2Client.connect(proxy.url, auto_ack=False)
        try:
            sid = client.request(b"GET", b"/acp", GET_STREAM)
            answer = client.answers[sid]
            await client.until(lambda: len(answer.body) >= STREAM_WINDOW - 1000)
            await asyncio.wait_for(up.blocked.wait(), 30)
            # a round trip on the same connections: what the upstream sent before is read
            post = await client.exchange(b"POST", b"/acp", [], b"{}")
            assert post.status == 202
            held = up.sent
            assert held <= 3 * STREAM_WINDOW  # the client's window, ours, one frame
            client.ack(sid)
            await client.until(lambda: answer.ended, timeout=120)
        finally:
            await client.close()
    assert len(answer.body) == total == up.sent
    event = b"data: " + b"x" * 1000 + b"\n\n"
    assert bytes(answer.body) == (event * (total // len(event) + 1))[:total]
    recorded = rows(db, "SELECT COUNT(*) FROM messages WHERE direction = 'a2c'")
    assert recorded == [(total // len(event),)]
    end = next(d for k, d in events(db, 1) if k == "stream_end")
    assert end["bytes"] == total


async def test_streams_at_once_count_against_max_connections(db: Path) -> None:
    def reply(headers: Any, body: bytes) -> list[tuple[Any, ...]]:
        return [("head", 200, SSE), ("data", b": open\n\n"), ("hold",)]

    async with (
        h2_upstream(reply) as up,
        running_http_proxy(db, up.url, max_connections=2) as proxy,
    ):
        client = await H2Client.connect(proxy.url)
        try:
            first = client.request(b"GET", b"/acp", GET_STREAM)
            second = client.request(b"GET", b"/acp", GET_STREAM)
            await client.until(lambda: all(client.answers[s].body for s in (first, second)))
            third = await client.exchange(b"GET", b"/acp", GET_STREAM)
            assert third.status == 503 and b"too many connections" in third.body
            client.reset(first)  # a slot is free again
            await asyncio.wait_for(up.reset.wait(), 30)
            fourth = client.request(b"GET", b"/acp", GET_STREAM)
            await client.until(lambda: bool(client.answers[fourth].body))
            assert client.answers[fourth].status == 200
        finally:
            await client.close()
    refused = [d["status"] for k, d in events(db) if k == "refused"]
    assert refused == [503]


async def test_stopping_the_listener_mid_stream_over_h2(db: Path) -> None:
    def reply(*_: Any) -> list[tuple[Any, ...]]:
        return [("head", 200, SSE), ("data", b'data: {"a":1}\n\n'), ("hold",)]

    async with h2_upstream(reply) as up:
        async with running_http_proxy(db, up.url) as proxy:
            client = await H2Client.connect(proxy.url)
            sid = client.request(b"GET", b"/acp", GET_STREAM)
            await client.until(lambda: bool(client.answers[sid].body))
        await client.until(lambda: client.closed or client.answers[sid].reset is not None)
        assert not client.answers[sid].ended  # cut, not finished
        await client.close()
    end = next(d for k, d in events(db, 1) if k == "stream_end")
    assert (end["how"], end["by"], end["messages"]) == ("shutdown", "proxy", [0])
    assert rows(db, "SELECT COUNT(ended_at) FROM captures") == [(1,)]


async def test_a_stream_the_upstream_did_not_take_is_sent_again(db: Path) -> None:
    def reply(headers: Any, body: bytes) -> list[tuple[Any, ...]]:
        if len(up.requests) == 2:  # the second request: GOAWAY, as a server going down does
            return [("goaway",)]
        return [("head", 202, []), ("end",)]

    async with h2_upstream(reply) as up, running_http_proxy(db, up.url) as proxy:
        client = await H2Client.connect(proxy.url)
        try:
            answers = [await client.exchange(b"POST", b"/acp", [], b"{}") for _ in range(3)]
        finally:
            await client.close()
    assert [a.status for a in answers] == [202, 202, 202]
    assert len(up.requests) == 4  # the refused one, sent again on a new connection
    assert len(up.clients) == 2
    assert rows(db, "SELECT COUNT(*) FROM messages") == [(3,)]


async def test_h2c_client_h1_upstream_headers_and_event_bytes(db: Path) -> None:
    stream = [
        b": keepalive\n\n",
        b'data: {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s"}}\n\n',
        b"id: 7\nretry: 1500\nevent: message\n",
        b'data: {"jsonrpc":"2.0",\ndata: "method":"two lines"}\r\n\r\n',
        b"data: \xff\xfe invalid utf-8\r",
        b'\r: comment only\r\rdata: {"split":',
        b"true}\n\n",
    ]
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: keep-alive, X-Hop\r\n"
        b"Keep-Alive: timeout=5\r\nX-Hop: 1\r\nX-Trace: MiXed\r\nTransfer-Encoding: chunked\r\n\r\n"
    )

    def reply(*_: Any) -> list[bytes | None]:
        return [head, *chunked(*stream), b"0\r\n\r\n"]

    async with (
        raw_upstream(reply) as up,
        running_http_proxy(db, up.url, upstream_http2="never") as proxy,
    ):
        client = await H2Client.connect(proxy.url)
        try:
            extra = [(b"x-client", b"v"), (b"te", b"trailers")]
            a = await client.exchange(b"GET", b"/acp", [*GET_STREAM, *extra])
        finally:
            await client.close()
    assert a.status == 200 and a.ended
    assert bytes(a.body) == b"".join(stream)  # every byte, as the upstream sent it
    assert a.headers == [(b"content-type", b"text/event-stream"), (b"x-trace", b"MiXed")]
    _method, target, headers, _body = up.requests[0]
    assert target == b"/acp"
    names = [n for n, _ in headers]
    assert names == [b"Host", b"accept", b"acp-connection-id", b"x-client"]
    assert dict(headers)[b"Host"] == urllib.parse.urlsplit(up.url).netloc.encode()
    assert rebuild_stream(a2c(db), events(db, 1)) == b"".join(stream)


async def test_an_upgrade_with_a_body_or_bad_settings_is_answered_in_http11(db: Path) -> None:
    def reply(*_: Any) -> list[bytes | None]:
        return [b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"]

    asks = [
        (b"HTTP2-Settings: !!!\r\n", b""),  # not base64url
        (b"HTTP2-Settings: AAMAAABk\r\nContent-Length: 2\r\n", b"{}"),  # a body
    ]
    async with raw_upstream(reply) as up, running_http_proxy(db, up.url) as proxy:
        u = urllib.parse.urlsplit(proxy.url)
        for extra, body in asks:
            reader, writer = await asyncio.open_connection(u.hostname, u.port)
            writer.write(
                b"POST /acp HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                b"Upgrade: h2c\r\n" + extra + b"\r\n" + body
            )
            got = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
            writer.close()
            assert got.startswith(b"HTTP/1.1 202 "), got
    assert [r[3] for r in up.requests] == [b"", b"{}"]
    assert {d["request"]["version"] for k, d in events(db) if k == "http"} == {"1.1"}

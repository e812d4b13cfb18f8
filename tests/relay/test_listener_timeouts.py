"""Every listener bounds how long a client may hold a connection without doing its part:
a request head (``--head-timeout``), a body (``--body-timeout``), the wait for the next
request and a client that reads nothing (``--idle-timeout``); and answers only ``Host``
names that are its own. Real processes on loopback sockets, raw clients
(docs/reliability.md, "Listeners")."""

from __future__ import annotations

import asyncio
from pathlib import Path

import h2.config
import h2.connection
import pytest
from support.listeners import (
    INITIALIZE,
    LISTENERS,
    answered,
    closed_by_peer,
    get,
    http_upstream,
    open_raw,
    post,
    running,
    upgrade_head,
    ws_flood_upstream,
)

FAST = ("--head-timeout", "1", "--body-timeout", "1", "--idle-timeout", "1")


def _half_head(kind: str, host: str) -> bytes:
    """The start of a request that never ends: an upgrade for ``ws``, a POST elsewhere."""
    if kind == "ws":
        return upgrade_head(host).removesuffix(b"\r\n\r\n")[:-10]
    return b"POST /acp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n" % host.encode()


def _a_request(kind: str, host: str) -> bytes:
    if kind == "ws":
        return upgrade_head(host)
    if kind == "ui":
        return b"GET /api/captures HTTP/1.1\r\nHost: %s\r\n\r\n" % host.encode()
    return (
        b"POST /acp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: "
        b"application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s"
        % (host.encode(), len(INITIALIZE), INITIALIZE)
    )


@pytest.mark.parametrize("kind", LISTENERS)
async def test_half_open_heads_are_closed_after_the_head_timeout(kind: str, tmp_path: Path) -> None:
    async with http_upstream() as up, running(kind, tmp_path, *FAST, upstream=up) as listener:
        host = f"{listener.host}:{listener.port}"
        clients = [await open_raw(listener, _half_head(kind, host)) for _ in range(50)]
        silent = [await open_raw(listener, b"") for _ in range(5)]  # nothing at all
        said = [await closed_by_peer(reader) for reader, _ in clients + silent]
        for _, writer in clients + silent:
            writer.close()
        if kind != "ws":  # (websockets drops it; the others say why)
            assert all(s.startswith(b"HTTP/1.1 408 ") for s in said[:50]), said[0]
        assert all(s == b"" for s in said[50:])
        head = await answered(listener, _a_request(kind, host))
        assert head.split(b" ")[1] in (b"101", b"200", b"502"), head  # still serving
        assert listener.proc.poll() is None


@pytest.mark.parametrize("kind", ["http", "replay"])
async def test_slow_bodies_hold_no_slot_past_the_body_timeout(kind: str, tmp_path: Path) -> None:
    extra = (*FAST, "--max-connections", "8") if kind == "http" else FAST
    async with http_upstream() as up, running(kind, tmp_path, *extra, upstream=up) as listener:
        host = f"{listener.host}:{listener.port}"
        slow = b"POST /acp HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000000\r\n\r\n0123456789"
        clients = [await open_raw(listener, slow % host.encode()) for _ in range(8)]
        if kind == "http":  # every slot is taken, for now
            await asyncio.sleep(0.3)
            busy = await answered(listener, post(listener, INITIALIZE))
            assert busy.startswith(b"HTTP/1.1 503 "), busy
        said = [await closed_by_peer(reader) for reader, _ in clients]
        assert all(s.startswith(b"HTTP/1.1 408 ") for s in said), said[0]
        assert all(b"--body-timeout" in s or b"1 s" in s for s in said)
        head = await answered(listener, post(listener, INITIALIZE))
        assert head.startswith(b"HTTP/1.1 200 "), head
        code = await listener.stop()  # replay ends by the signal's default action
    if kind == "http":  # a line for the first, the others counted (a line per status per 10 s)
        assert code == 0
        out = listener.output()
        assert out.count(b"; answered HTTP 408") == 1 and b"7 more answered HTTP 408" in out


@pytest.mark.parametrize("kind", ["http", "replay", "ui"])
async def test_a_kept_alive_connection_is_closed_after_the_idle_timeout(
    kind: str, tmp_path: Path
) -> None:
    async with http_upstream() as up, running(kind, tmp_path, *FAST, upstream=up) as listener:
        host = f"{listener.host}:{listener.port}"
        request = _a_request(kind, host)
        reader, writer = await open_raw(listener, request)
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        assert head.startswith(b"HTTP/1.1 200 "), head
        assert b"connection: close" not in head.lower()  # kept alive, then
        await closed_by_peer(reader)  # closed for want of a next request
        writer.close()


async def test_an_http2_connection_with_no_stream_is_closed_after_the_idle_timeout(
    tmp_path: Path,
) -> None:
    async with http_upstream() as up, running("http", tmp_path, *FAST, upstream=up) as listener:
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        conn.initiate_connection()
        reader, writer = await open_raw(listener, conn.data_to_send())
        said = await closed_by_peer(reader)
        writer.close()
    events = conn.receive_data(said)
    assert any(type(e).__name__ == "ConnectionTerminated" for e in events), events  # GOAWAY


@pytest.mark.parametrize("kind", ["http", "ws"])
async def test_a_client_that_reads_nothing_is_dropped_after_the_idle_timeout(
    kind: str, tmp_path: Path
) -> None:
    """An event stream (a WebSocket) to a client that stopped reading: it is dropped, and
    its slot (the only one) is free for the next client."""
    extra = (*FAST, "--max-connections", "1")
    async with (
        http_upstream() as http_up,
        ws_flood_upstream() as ws_up,
        running(kind, tmp_path, *extra, upstream=http_up if kind == "http" else ws_up) as listener,
    ):
        host = f"{listener.host}:{listener.port}"
        if kind == "http":
            stream = b"Accept: text/event-stream\r\nAcp-Connection-Id: c\r\n"
            flood, request = get(listener, "/acp", extra=stream), post(listener, INITIALIZE)
        else:
            flood, request = upgrade_head(host), upgrade_head(host)
        _reader, writer = await open_raw(listener, flood, rcvbuf=4096)
        for _ in range(600):  # until the proxy dropped it (a hang guard of 60 s)
            head = await answered(listener, request)
            if not head.startswith(b"HTTP/1.1 503 "):
                break
            await asyncio.sleep(0.1)
        assert head.split(b" ")[1] in (b"101", b"200"), head
        writer.close()


@pytest.mark.parametrize("kind", ["http", "ws", "replay"])
async def test_only_loopback_host_names_and_allowed_ones_are_answered(
    kind: str, tmp_path: Path
) -> None:
    extra = ("--allow-host", "acp.example")
    async with http_upstream() as up, running(kind, tmp_path, *extra, upstream=up) as listener:
        for name in ("evil.example", "127.0.0.1.nip.io", "evil.example:80", "acp.example.evil"):
            refused = await answered(listener, _a_request(kind, name))
            assert refused.startswith(b"HTTP/1.1 421 "), (name, refused)
        for name in (f"127.0.0.1:{listener.port}", "localhost:9", "[::1]", "ACP.example:1"):
            head = await answered(listener, _a_request(kind, name))
            assert head.split(b" ")[1] in (b"101", b"200", b"502"), (name, head)


@pytest.mark.parametrize("kind", ["http", "ws"])
async def test_a_flood_of_refusals_is_a_line_and_a_count(kind: str, tmp_path: Path) -> None:
    # docs/reliability.md: a line per status per interval, the rest counted, the count told
    # when the listener stops; every client is still answered
    async with http_upstream() as up, running(kind, tmp_path, upstream=up) as listener:
        for _ in range(30):
            refused = await answered(listener, _a_request(kind, "evil.example"))
            assert refused.startswith(b"HTTP/1.1 421 "), refused
        assert await listener.stop() == 0
    lines = [line for line in listener.output().splitlines() if b"421" in line]
    assert len(lines) == 2, lines
    assert b"evil.example" in lines[0]
    assert lines[1] == b"acp-proxy: 29 more answered HTTP 421" + lines[1][36:]
    assert b"(a line per status per 10 s)" in lines[1]

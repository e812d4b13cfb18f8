"""Every listener survives running out of file descriptors, and stops within seconds of a
signal whatever its clients do: real processes (one of them short of descriptors), real
loopback sockets, clients that stop reading (docs/reliability.md, "Listeners")."""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from support.listeners import (
    INITIALIZE,
    LISTENERS,
    Listener,
    answered,
    flood_agent,
    flood_recording,
    get,
    http_upstream,
    open_raw,
    post,
    running,
    upgrade_head,
    ws_flood_upstream,
    ws_text,
)

NOFILE = 256  # the listener's RLIMIT_NOFILE


async def _exhaust(listener: Listener) -> list[asyncio.StreamWriter]:
    """Half-open connections, more than the listener has descriptors for, each having sent
    the start of a head; as many as the kernel's queue takes beyond what it accepted."""
    head = b"GET /acp HTTP/1.1\r\nHost: %s:%d\r\n" % (listener.host.encode(), listener.port)
    writers = []
    for _ in range(NOFILE + 50):
        try:
            _, writer = await asyncio.wait_for(open_raw(listener, head), 5)
        except (TimeoutError, OSError):
            break  # the queue is full too
        writers.append(writer)
    return writers


def _legit(listener: Listener) -> bytes:
    if listener.kind == "ws":
        return upgrade_head(f"{listener.host}:{listener.port}")
    if listener.kind == "ui":
        return get(listener, "/api/captures")
    return post(listener, INITIALIZE)


@pytest.mark.parametrize("kind", LISTENERS)
async def test_running_out_of_descriptors_is_survived(kind: str, tmp_path: Path) -> None:
    async with (
        http_upstream() as up,
        running(kind, tmp_path, upstream=up, nofile=NOFILE) as listener,
    ):
        writers = await _exhaust(listener)
        assert len(writers) > NOFILE  # more than it can hold
        for _ in range(200):  # until it is short (a hang guard of 20 s)
            if b"cannot accept" in listener.output():
                break
            await asyncio.sleep(0.1)
        for writer in writers:
            writer.close()
        head = await answered(listener, _legit(listener), within=60)
        assert head.split(b" ")[1] in (b"101", b"200"), head  # served again, by itself
        assert listener.proc.poll() is None
    out = listener.output()
    assert b"Traceback" not in out and b"Invalid file descriptor" not in out, out[:2000]
    assert len(out) < 4096, out[:2000]  # a line now and then, not megabytes
    assert b"cannot accept connections: EMFILE" in out


@contextlib.asynccontextmanager
async def _flooded(case: str, tmp_path: Path) -> AsyncIterator[Listener]:
    """A listener, and a client of it that reads nothing of a flood sent to it."""
    kind, what = case.split()
    flood = flood_recording(tmp_path)
    async with ws_flood_upstream() as ws_up, http_upstream() as http_up:
        upstream = {"ws": ws_up, "http": http_up}.get(kind, http_up)
        if case == "http websocket":  # upgrades go to the same endpoint as ws://
            upstream = ws_up.replace("ws://", "http://")
        agent = flood_agent(tmp_path) if what == "agent" else None
        grace = ("--grace", "0.5") if agent else ()  # an agent's grace, kept short
        if kind in ("ws", "http"):  # and the wait for a close frame that never comes
            grace += ("--close-timeout", "1")
        async with running(
            kind, tmp_path, *grace, upstream=upstream, agent=agent, recording=flood
        ) as listener:
            host = f"{listener.host}:{listener.port}"
            if case == "ui export":  # the imported flood, 25 MiB of it
                request = get(listener, "/api/captures/2/export/jsonl")
            elif what == "stream":
                request = await _event_stream(listener)
            else:
                request = upgrade_head(host) + (ws_text(INITIALIZE) if kind == "replay" else b"")
            _reader, writer = await open_raw(listener, request, rcvbuf=4096)
            await asyncio.sleep(1)  # the buffers fill up (64 KiB events on loopback)
            yield listener
            writer.close()


async def _event_stream(listener: Listener) -> bytes:
    """The request of an event stream (replay: of the connection an initialize opened)."""
    conn = b"c"
    if listener.kind == "replay":
        head = await answered(listener, post(listener, INITIALIZE))
        found = re.search(rb"(?i)acp-connection-id: (\S+)", head)
        assert found is not None, head
        conn = found.group(1)
    return get(
        listener, "/acp", extra=b"Accept: text/event-stream\r\nAcp-Connection-Id: %s\r\n" % conn
    )


@pytest.mark.parametrize(
    "case",
    [
        "ws upstream",
        "ws agent",
        "http websocket",
        "http stream",
        "replay websocket",
        "replay stream",
        "ui export",
    ],
)
async def test_a_signal_ends_the_listener_whatever_a_client_does(case: str, tmp_path: Path) -> None:
    """A client fills the listener's send buffer and reads no more; SIGTERM still ends the
    listener within seconds: the close timeout, then an agent's grace."""
    async with _flooded(case, tmp_path) as listener:
        code = await listener.stop(signal.SIGTERM, within=40)  # a hang guard, not a duration
    assert code in (0, -signal.SIGTERM), listener.output()[-2000:]

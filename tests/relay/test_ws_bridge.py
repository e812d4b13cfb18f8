"""The stdio↔WebSocket bridges: a stdio agent exposed over WebSocket (a process per
connection) and our stdio as a client of a WebSocket agent. Lines become messages and back;
both legs are reconstructible from the recording."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest
from support.proc import PROXY
from support.ws import RAW, events, messages, rows, running_proxy, upstream_server
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed, InvalidStatus

from acp_proxy.protocol.frames import Direction
from acp_proxy.store.reader import Store

MIB = 1024 * 1024

# An agent that writes a file to stdout (then closes it when told to), then copies stdin to
# a file, byte for byte.
AGENT = """
import os, sys, time
src, copy = sys.argv[1], sys.argv[2]
os.write(1, open(src, "rb").read())
if "--close-stdout" in sys.argv:
    os.close(1)
with open(copy, "wb") as out:
    while chunk := os.read(0, 1 << 20):
        out.write(chunk)
sys.exit(int(sys.argv[3]))
"""

# An agent that echoes each stdin line back on stdout.
LINE_ECHO = """
import sys
for line in sys.stdin.buffer:
    sys.stdout.buffer.write(line); sys.stdout.buffer.flush()
"""


def agent(
    tmp_path: Path, out: bytes, exit_code: int = 0, *, close_stdout: bool = False
) -> tuple[list[str], Path]:
    src, copy = tmp_path / "agent-out.bin", tmp_path / "agent-in.bin"
    src.write_bytes(out)
    flags = ["--close-stdout"] if close_stdout else []
    return [sys.executable, "-c", AGENT, str(src), str(copy), str(exit_code), *flags], copy


async def test_agent_lines_become_messages_non_utf8_as_binary(tmp_path: Path, db: Path) -> None:
    out = (
        b'{"jsonrpc":"2.0","id":0,"result":{}}\n'
        b"\n"
        b"crlf line\r\n"
        b"\xff\xfe not utf-8\n"
        b"caf\xc3\xa9 \xe2\x9c\x94\n"
        b"final line without newline"
    )
    cmd, _copy = agent(tmp_path, out, close_stdout=True)
    async with running_proxy(db, command=cmd) as proxy:
        async with connect(proxy.url + "/acp", **RAW) as ws:
            got = []
            with pytest.raises(ConnectionClosed):
                while True:
                    got.append(await ws.recv(decode=False))
        assert ws.close_code == 1000
    assert got == [
        b'{"jsonrpc":"2.0","id":0,"result":{}}',
        b"",
        b"crlf line\r",
        b"\xff\xfe not utf-8",
        "café ✔".encode(),
        b"final line without newline",
    ]
    a2c = [m for m in messages(db, 1) if m[1] == "a2c"]
    assert [(m[2], m[3]) for m in a2c] == [
        ("text", 1),
        ("text", 1),
        ("text", 1),
        ("binary", 1),  # not UTF-8: a binary message with the same bytes
        ("text", 1),
        ("text", 0),  # the stdio leg had no final newline
    ]
    assert Store(db).stream_bytes(1, Direction.AGENT_TO_CLIENT) == out
    (cap,) = rows(db, "SELECT transport, exit_code, agent_command FROM captures")
    assert cap[0] == "ws-stdio" and cap[1] == 0


async def test_client_messages_become_lines(tmp_path: Path, db: Path) -> None:
    cmd, copy = agent(tmp_path, b"")
    sent = [
        (True, b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}'),
        (False, b"\x00binary\xff"),
        (True, b'{\n  "pretty": true\n}'),  # embedded newlines reach the agent unchanged
        (True, b""),
    ]
    async with running_proxy(db, command=cmd) as proxy, connect(proxy.url + "/acp", **RAW) as ws:
        for is_text, data in sent:
            await ws.send(data, text=is_text)
        await ws.close()
    expected = b"".join(d + b"\n" for _, d in sent)
    for _ in range(200):
        if rows(db, "SELECT ended_at FROM captures")[0][0]:
            break
        await asyncio.sleep(0.05)
    assert copy.read_bytes() == expected
    c2a = [m for m in messages(db, 1) if m[1] == "c2a"]
    assert [(m[2], m[3], m[4]) for m in c2a] == [("text" if t else "binary", 1, d) for t, d in sent]
    assert Store(db).stream_bytes(1, Direction.CLIENT_TO_AGENT) == expected
    ends = [d for k, d in events(db, 1) if k == "direction_end" and d["direction"] == "c2a"]
    assert ends == [{"direction": "c2a", "delivered": 4, "embedded_newlines": 1}]


async def test_32_mb_lines_both_ways(tmp_path: Path, db: Path) -> None:
    line = b'{"jsonrpc":"2.0","method":"big","params":{"s":"' + b"b" * (32 * MIB) + b'"}}'
    async with (
        running_proxy(db, command=[sys.executable, "-c", LINE_ECHO]) as proxy,
        connect(proxy.url + "/acp", **RAW) as ws,
    ):
        await ws.send(line, text=True)
        assert await ws.recv(decode=False) == line
    store = Store(db)
    assert store.stream_bytes(1, Direction.CLIENT_TO_AGENT) == line + b"\n"
    assert store.stream_bytes(1, Direction.AGENT_TO_CLIENT) == line + b"\n"


@pytest.mark.parametrize(("status", "code", "reason"), [(0, 1000, ""), (3, 1011, "status 3")])
async def test_agent_exit_closes_the_client(
    tmp_path: Path, db: Path, status: int, code: int, reason: str
) -> None:
    script = f"import os, sys; os.write(1, b'bye\\n'); sys.exit({status})"
    async with (
        running_proxy(db, command=[sys.executable, "-c", script]) as proxy,
        connect(proxy.url + "/acp", **RAW) as ws,
    ):
        assert await ws.recv() == "bye"
        with pytest.raises(ConnectionClosed):
            await ws.recv()
        assert ws.close_code == code
        assert reason in (ws.close_reason or "")
    assert rows(db, "SELECT exit_code FROM captures") == [(status,)]


async def test_client_leaving_terminates_a_stubborn_agent(db: Path) -> None:
    stubborn = "import signal, time; print('up', flush=True); time.sleep(60)"
    async with (
        running_proxy(db, command=[sys.executable, "-c", stubborn], grace=0.2) as proxy,
        connect(proxy.url + "/acp", **RAW) as ws,
    ):
        assert await ws.recv() == "up"
    kinds = [k for k, _ in events(db, 1)]
    assert "terminate" in kinds
    (exit_code,) = rows(db, "SELECT exit_code FROM captures")[0]
    assert exit_code == 128 + signal.SIGTERM


async def test_missing_agent_command_is_a_502(db: Path) -> None:
    async with running_proxy(db, command=["no-such-agent-xyz"]) as proxy:
        with pytest.raises(InvalidStatus) as info:
            await connect(proxy.url + "/acp", **RAW)
        assert info.value.response.status_code == 502
        assert b"not found" in info.value.response.body
    assert [k for k, _ in events(db)] == ["spawn_failed"]


async def test_each_connection_gets_its_own_agent(db: Path) -> None:
    pid = "import os; print(os.getpid(), flush=True); import sys; sys.stdin.read()"
    async with running_proxy(db, command=[sys.executable, "-c", pid]) as proxy:

        async def one() -> str:
            async with connect(proxy.url + "/acp", **RAW) as ws:
                return str(await ws.recv())

        pids = await asyncio.gather(*(one() for _ in range(6)))
    assert len(set(pids)) == 6
    recorded = {str(p) for (p,) in rows(db, "SELECT pid FROM captures")}
    assert recorded == set(pids)


# -- our stdio as a client of a WebSocket agent ---------------------------------------------


async def run_record_upstream(
    db: Path, url: str, stdin: bytes, *, echoed_first: bytes = b""
) -> tuple[int, bytes, bytes]:
    """``record --upstream`` with ``stdin``; its exit code, stdout and stderr. Its stdin's end
    closes the upstream at once, so echoes still in flight then are lost; with
    ``echoed_first``, stdin ends only once stdout has brought those bytes back."""
    proc = await asyncio.create_subprocess_exec(
        *PROXY,
        "record",
        "--db",
        str(db),
        "--upstream",
        url,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out = b""
    if echoed_first:  # stdin stays open until those bytes are back on stdout
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(stdin)
        await proc.stdin.drain()
        out = await asyncio.wait_for(proc.stdout.readexactly(len(echoed_first)), 60)
        proc.stdin.close()
        stdin = b""
    rest, err = await asyncio.wait_for(proc.communicate(stdin or None), 60)
    assert proc.returncode is not None
    return proc.returncode, out + rest, err


async def test_stdio_client_to_ws_agent_lines_both_ways(db: Path) -> None:
    lines = (
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}\n'
        b"\xff not utf-8\n"
        b"\n"
        b"last without newline"
    )
    async with upstream_server() as up:
        first = lines[: lines.index(b"\n\n") + 2]  # echoed before our stdin ends
        code, out, err = await run_record_upstream(db, up.url + "/acp", lines, echoed_first=first)
        await asyncio.wait_for(up.event.wait(), 10)
    assert code == 0, err
    assert up.received[0] == [
        ("msg", b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}'),
        ("msg", b"\xff not utf-8"),
        ("msg", b""),
        ("msg", b"last without newline"),
    ]
    assert up.closed == [(1000, "", False)]  # our stdin ended: a normal close
    # the echo comes back as lines (each message + "\n"); the echo of the last line races
    # with our close, which follows our stdin's end at once
    echoed = b"".join(d + b"\n" for _, d in up.received[0])
    assert echoed.startswith(out) and out.startswith(echoed[: echoed.index(b"\n\n") + 2])
    c2a = [m for m in messages(db, 1) if m[1] == "c2a"]
    assert [(m[2], m[3]) for m in c2a] == [("text", 1), ("binary", 1), ("text", 1), ("text", 0)]
    store = Store(db)
    assert store.stream_bytes(1, Direction.CLIENT_TO_AGENT) == lines
    assert store.stream_bytes(1, Direction.AGENT_TO_CLIENT) == out
    (cap,) = rows(db, "SELECT transport, upstream_url, exit_code FROM captures")
    assert cap == ("stdio-ws", up.url + "/acp", 0)


async def test_stdio_client_upstream_unreachable(db: Path) -> None:
    async with upstream_server() as up:
        dead = up.url
    code, out, err = await run_record_upstream(db, dead + "/acp", b"")
    assert code == 4
    assert out == b""
    assert b"unreachable" in err and err.count(b"\n") == 1
    assert [k for k, _ in events(db)] == ["upstream_failed"]


async def test_stdio_client_upstream_close_code_is_the_exit_status(db: Path) -> None:
    async def closer(ws: ServerConnection, _up: object) -> None:
        await ws.send("hello")
        await ws.close(4000, "go away")

    async with upstream_server(closer) as up:
        proc = await asyncio.create_subprocess_exec(
            *PROXY, "record", "--db", str(db), "--upstream", up.url,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert proc.stdout is not None and proc.stderr is not None
        out = await asyncio.wait_for(proc.stdout.read(), 30)  # stdin stays open
        err = await proc.stderr.read()
        code = await proc.wait()
    assert out == b"hello\n"
    assert code == 4
    assert b"4000 go away" in err


async def test_stdio_client_sigterm_closes_upstream_going_away(db: Path) -> None:
    async with upstream_server() as up:
        proc = await asyncio.create_subprocess_exec(
            *PROXY, "record", "--db", str(db), "--upstream", up.url,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b'{"ping":1}\n')
        assert await asyncio.wait_for(proc.stdout.readline(), 30) == b'{"ping":1}\n'
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 30)
        await asyncio.wait_for(up.event.wait(), 10)
    assert code == 128 + signal.SIGTERM
    assert up.closed == [(1001, "", False)]
    assert os.path.exists(db)


@pytest.mark.parametrize("keep", [False, True])
async def test_stdio_client_sends_the_given_headers_and_stores_them_redacted(
    db: Path, keep: bool
) -> None:
    async def check(ws: ServerConnection, _up: object) -> None:
        assert ws.request is not None
        await ws.send(
            f"{ws.request.headers.get('Authorization')}|{ws.request.headers.get('X-Team')}"
        )
        await ws.close()

    async with upstream_server(check) as up:
        proc = await asyncio.create_subprocess_exec(
            *PROXY, "record", "--db", str(db), "--upstream", up.url,
            "--header", "Authorization: Bearer s3cret-token", "--header", "X-Team:  acp ",
            *(["--keep-secrets"] if keep else []),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, _err = await asyncio.wait_for(proc.communicate(), 30)
    assert out == b"Bearer s3cret-token|acp\n"
    (handshake,) = [d for k, d in events(db) if k == "handshake"]
    sent = dict(map(tuple, handshake["upstream"]["headers"]))
    if keep:
        assert sent["Authorization"] == "Bearer s3cret-token" and sent["X-Team"] == "acp"
    else:
        assert sent["Authorization"] == "Bearer [redacted]" and sent["X-Team"] == "[redacted]"


async def test_header_needs_upstream_and_a_name(db: Path) -> None:
    for args in (
        ["--header", "X: y", "--", "cat"],
        ["--upstream", "ws://127.0.0.1:9/acp", "--header", "no colon here"],
        ["--keep-secrets", "--", "cat"],
    ):
        proc = await asyncio.create_subprocess_exec(
            *PROXY, "record", "--db", str(db), *args,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(proc.communicate(), 30)
        assert proc.returncode == 2 and out == b"" and err.count(b"\n") == 1, err


@pytest.mark.parametrize("inside", [False, True])
async def test_each_clients_agent_learns_its_chain_as_under_record(
    tmp_path: Path, db: Path, monkeypatch: pytest.MonkeyPatch, inside: bool
) -> None:
    # docs/protocol.md §13.4: the agent of each connection gets ACP_PROXY_CHAIN with that
    # connection's capture as its parent; a bridge run inside a chain is a hop of it
    outer, parent = "a" * 32, "b" * 32
    if inside:
        monkeypatch.setenv("ACP_PROXY_CHAIN", f"{outer}:{parent}")
    else:
        monkeypatch.delenv("ACP_PROXY_CHAIN", raising=False)
    say = "import os; print(os.environ.get('ACP_PROXY_CHAIN', '-'), flush=True)"
    async with (
        running_proxy(db, command=[sys.executable, "-c", say]) as proxy,
        connect(proxy.url + "/acp", **RAW) as ws,
    ):
        handed = (await ws.recv(decode=False)).decode()
    ((uid,),) = rows(db, "SELECT uid FROM captures")
    assert handed == f"{outer if inside else uid}:{uid}"
    hops = [detail for kind, detail in events(db) if kind == "chain"]
    assert hops == ([{"chain": outer, "parent": parent, "role": "hop"}] if inside else [])

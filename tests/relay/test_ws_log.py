"""The ``ws`` listener says one line per connection on stderr: the peer, the capture, and
how the connection ended (closed and the agent's exit, refused with its status, upstream
failed), so a user watching the terminal sees each client come and go."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from pathlib import Path

import pytest
from support.proc import PROXY, peer
from support.ws import RAW, rows
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus


async def _lines_until(stream: asyncio.StreamReader, n: int, lines: list[str]) -> None:
    while sum("capture " in line for line in lines) < n:
        line = (await asyncio.wait_for(stream.readline(), 60)).decode()
        if not line:
            return
        lines.append(line)


async def test_one_line_per_connection(db: Path, tmp_path: Path) -> None:
    script = tmp_path / "s.jsonl"
    script.write_text(
        '["c2a", ""]\n["a2c", "{\\"jsonrpc\\":\\"2.0\\",\\"id\\":0,\\"result\\":{}}"]\n'
    )
    proc = await asyncio.create_subprocess_exec(
        *PROXY, "ws", "--db", str(db), "--listen", "127.0.0.1:0", "--",
        *peer("script_agent.py", str(script)),
        stderr=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stderr is not None
    lines = [(await asyncio.wait_for(proc.stderr.readline(), 30)).decode()]
    url = lines[0].split("listening on ", 1)[1].split(" ", 1)[0]
    try:
        async with connect(url + "/acp?x=secret", **RAW) as ws:
            await ws.send('{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}')
            await ws.recv()
            local = ws.local_address
        with pytest.raises(InvalidStatus):
            async with connect(url + "/acp", origin="https://evil.example", **RAW):  # type: ignore[arg-type]
                pass
        await _lines_until(proc.stderr, 2, lines)
    finally:
        proc.send_signal(signal.SIGINT)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(proc.wait(), 30)
    said = [line for line in lines if "capture " in line]
    assert len(said) == 2, lines
    uids = [u for (u,) in rows(db, "SELECT uid FROM captures ORDER BY id")]
    good = next(line for line in said if "closed" in line)
    refused = next(line for line in said if line is not good)
    assert good.startswith(
        f"acp-proxy: ws {local[0]}:{local[1]} /acp?x=[redacted] capture {uids[0][:8]}:"
    )
    assert "closed, agent exit 0" in good and "client close code 1000" in good
    assert "secret" not in "".join(lines)  # query values are redacted in the log too
    assert f"capture {uids[1][:8]}: refused, HTTP 403: origin" in refused

"""The ``http`` command as a user runs it, and the pure header policy of an exchange."""

from __future__ import annotations

import asyncio
import signal
import subprocess
from pathlib import Path

import pytest
from support.http import http_session, sdk_http_server
from support.proc import PROXY
from support.ws import rows

from acp_proxy.transports.http_headers import framing, relay_headers


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--upstream", "ws://x/acp"], b"http://"),
        ([], b"--upstream"),
        (["--listen", "0.0.0.0:0", "--upstream", "http://x/acp"], b"--token"),
        (["--listen", "nonsense", "--upstream", "http://x/"], b"HOST:PORT"),
        (["--max-size", "0", "--upstream", "http://x/"], b"--max-size"),
    ],
)
def test_bad_arguments_are_one_line(db: Path, args: list[str], message: bytes) -> None:
    r = subprocess.run([*PROXY, "http", "--db", str(db), *args], capture_output=True, timeout=30)
    assert r.returncode == 2
    assert message in r.stderr and r.stderr.count(b"\n") == 1, r.stderr


async def test_http_command_relays_records_and_stops_on_sigterm(tmp_path: Path, db: Path) -> None:
    (tmp_path / "notes.txt").write_text("remember the milk\n")
    async with sdk_http_server() as up:
        proc = await asyncio.create_subprocess_exec(
            *PROXY, "http", "--db", str(db), "--listen", "127.0.0.1:0", "--upstream", up.url,
            stderr=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert proc.stderr is not None and proc.stdout is not None
        line = (await asyncio.wait_for(proc.stderr.readline(), 30)).decode()
        url = line.split("listening on ", 1)[1].split(" ", 1)[0]
        assert url.startswith("http://127.0.0.1:")
        _updates, stops = await http_session(url + "/acp", tmp_path)
        assert stops == ["end_turn", "end_turn"]
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 60) == 0
        assert await proc.stdout.read() == b""  # nothing on stdout, ever
    ((transport, count, ended),) = rows(
        db, "SELECT transport, message_count, ended_at IS NOT NULL FROM captures"
    )
    assert (transport, ended) == ("http", 1)
    assert count == len(rows(db, "SELECT 1 FROM messages")) >= 20


def test_headers_policy() -> None:
    h = [
        (b"Host", b"proxy:8765"),
        (b"Connection", b"keep-alive, X-Hop"),
        (b"X-Hop", b"dropped: named in Connection"),
        (b"Keep-Alive", b"timeout=5"),
        (b"TE", b"trailers"),
        (b"Upgrade", b"h2c"),
        (b"HTTP2-Settings", b"AAMAAABkAAQAoAAAAAIAAAAA"),
        (b"Expect", b"100-continue"),
        (b"Authorization", b"Bearer ours"),
        (b"authorization", b"Basic theirs"),
        (b"Acp-Connection-Id", b"c1"),
        (b"Cookie", b"a=1"),
        (b"Cookie", b"b=2"),
        (b"Content-Length", b"12"),
        (b"Proxy-Authorization", b"Basic x"),
    ]

    def ours(name: str, value: str) -> bool:
        return name.lower() == "authorization" and "ours" in value

    assert relay_headers(h, request=True, consumed=ours) == [
        (b"authorization", b"Basic theirs"),
        (b"Acp-Connection-Id", b"c1"),
        (b"Cookie", b"a=1"),
        (b"Cookie", b"b=2"),
    ]
    response = [(b"Set-Cookie", b"s=1"), (b"Date", b"d"), (b"Transfer-Encoding", b"chunked")]
    assert relay_headers(response, request=False) == response[:2]
    assert framing(h, request=True) == [(b"Content-Length", b"12")]
    assert framing([], request=True) == []
    assert framing([], request=False) == [(b"Transfer-Encoding", b"chunked")]
    both = [(b"Content-Length", b"3"), (b"Transfer-Encoding", b"chunked")]
    assert framing(both, request=False) == [(b"Transfer-Encoding", b"chunked")]

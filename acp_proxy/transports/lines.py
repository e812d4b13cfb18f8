"""The stdio leg of a stdio<->WebSocket bridge, and the agent process behind it.

What belongs here: :class:`LineEndpoint` — newline-delimited lines in and out of pipes, as
messages for the relay — and :func:`agent_endpoint`, that leg to an agent process (one per
WebSocket connection; its lifecycle is :class:`~acp_proxy.transports.process.AgentProcess`).

Bridging reshapes by design (docs/protocol.md §2.1 vs §2.3): a line becomes a message and a
message becomes a line; the payload bytes are unchanged. A line that is valid UTF-8 becomes a
text message; one that is not becomes a **binary** message with the same bytes (a text
message must be UTF-8; ACP peers ignore binary messages, so such a line reaches the peer's
wire and the recording, never silently dropped). A message (text or binary) becomes its
payload followed by ``\\n``. The stored row carries both legs: ``raw`` (the payload),
``opcode`` (the WebSocket leg) and ``terminated`` (whether the stdio leg had ``\\n``).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import os
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from acp_proxy.protocol.frames import Opcode
from acp_proxy.protocol.framing import LineFramer
from acp_proxy.transports.process import AgentProcess
from acp_proxy.transports.stdio import exit_status, write_all
from acp_proxy.transports.websocket import Ended, LegEnd, LegMessage

__all__ = ["FdChannel", "LineEndpoint", "agent_endpoint"]

_CHUNK = 1 << 20


class _Channel(Protocol):
    async def read(self) -> bytes: ...
    async def write_line(self, data: bytes) -> None: ...
    async def close_write(self) -> None: ...


class _PipeChannel:
    """An agent's stdout (read) and stdin (write) as asyncio pipes."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def read(self) -> bytes:
        return await self.reader.read(_CHUNK)

    async def write_line(self, data: bytes) -> None:
        self.writer.write(data)
        self.writer.write(b"\n")
        await self.writer.drain()

    async def close_write(self) -> None:
        if not self.writer.is_closing():
            self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()


class FdChannel:
    """Our own stdin/stdout, read and written by threads (blocking fds, as a shell left
    them: never switched to non-blocking, which would leak into a shared terminal)."""

    def __init__(self, in_fd: int, out_fd: int) -> None:
        self.in_fd, self.out_fd = in_fd, out_fd
        self._q: asyncio.Queue[bytes] = asyncio.Queue(maxsize=4)
        self._stopped = False
        self._loop = asyncio.get_running_loop()
        self._out = concurrent.futures.ThreadPoolExecutor(1, "acp-proxy-stdout")
        self._reader = threading.Thread(target=self._read_loop, name="acp-proxy-stdin", daemon=True)
        self._reader.start()

    def _read_loop(self) -> None:
        while True:
            try:
                data = os.read(self.in_fd, _CHUNK)
            except OSError:
                data = b""
            try:
                asyncio.run_coroutine_threadsafe(self._q.put(data), self._loop).result()
            except (RuntimeError, concurrent.futures.CancelledError):
                return  # the loop is gone
            if not data:
                return

    def stop(self) -> None:
        """Stop reading: ``read`` returns EOF once what was already read is consumed."""
        self._stopped = True
        if self._q.empty():
            self._q.put_nowait(b"")

    async def read(self) -> bytes:
        if self._stopped and self._q.empty():
            return b""
        return await self._q.get()

    async def write_line(self, data: bytes) -> None:
        try:
            await self._loop.run_in_executor(self._out, _write_line, self.out_fd, data)
        except OSError:
            self.stop()  # nobody reads our stdout any more: the client is gone
            raise

    async def close_write(self) -> None:
        self.stop()
        await self._loop.run_in_executor(self._out, _close_fd, self.out_fd)
        self._out.shutdown(wait=False)


def _write_line(fd: int, data: bytes) -> None:
    if len(data) < 65536:
        write_all(fd, data + b"\n")
    else:  # no copy of a large payload just to append one byte
        write_all(fd, data)
        write_all(fd, b"\n")


def _close_fd(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def _is_utf8(data: bytes) -> bool:
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


EofEnding = Callable[[], Coroutine[Any, Any, LegEnd]]


class LineEndpoint:
    """A stdio stream as messages: each ``\\n``-terminated line is one message.

    A line longer than ``max_line`` is returned in ``oversize`` pieces (recorded, not
    forwarded). ``eof_ending`` says how the stream's end is mirrored (an agent's exit).
    """

    line_based = True

    def __init__(
        self,
        channel: _Channel,
        side: str,
        max_line: int,
        *,
        eof_ending: EofEnding | None = None,
        on_end: Callable[[LegEnd], None] | None = None,
    ) -> None:
        self.channel = channel
        self.side = side
        self._framer = LineFramer(max_line)
        self._pending: collections.deque[LegMessage] = collections.deque()
        self._eof = False
        self._oversize = False
        self._eof_ending = eof_ending
        self._on_end = on_end
        self._override: LegEnd | None = None
        self._ended = False

    def interrupt(self, why: LegEnd) -> None:
        """End reading early (a signal): ``recv`` raises with ``why`` after what was read."""
        self._override = why
        if isinstance(self.channel, FdChannel):
            self.channel.stop()

    async def recv(self) -> LegMessage:
        while not self._pending:
            if self._eof:
                if self._override is not None:
                    raise Ended(self._override)
                if self._eof_ending is not None:
                    raise Ended(await self._eof_ending())
                raise Ended(LegEnd(None, kind="eof"))
            data = await self.channel.read()
            t = time.monotonic_ns()
            if not data:
                self._eof = True
                for piece in self._framer.end():
                    self._add(piece.raw, False, False, t)
                continue
            for piece in self._framer.feed(data):
                self._add(piece.raw, piece.terminated, piece.split, t)
        return self._pending.popleft()

    def _add(self, raw: bytes, terminated: bool, split: bool, t: int) -> None:
        oversize = split or self._oversize
        self._oversize = split
        opcode = Opcode.TEXT if _is_utf8(raw) else Opcode.BINARY
        self._pending.append(LegMessage(opcode, raw, t, terminated, oversize))

    async def send(self, msg: LegMessage) -> None:
        try:
            await self.channel.write_line(msg.data)
        except (OSError, ConnectionError):
            raise Ended(LegEnd(None, kind="eof", detail={"error": "write failed"})) from None

    async def end(self, why: LegEnd) -> None:
        if self._ended:
            return
        self._ended = True
        await self.channel.close_write()
        if self._on_end is not None:
            self._on_end(why)


# -- an agent process per connection ------------------------------------------------------


async def agent_endpoint(agent: AgentProcess, max_line: int) -> LineEndpoint:
    """The stdio leg to ``agent``: its stdout and stdin as line messages. When the agent
    closes its stdout, the relay ends as :func:`_exit_ending` says; when the relay ends
    this leg (the client went away), the agent is ended (``AgentProcess.stop``)."""
    out, writer = await agent.pipes()

    async def eof_ending() -> LegEnd:
        return await _exit_ending(agent)

    return LineEndpoint(
        _PipeChannel(out, writer),
        "agent",
        max_line,
        eof_ending=eof_ending,
        on_end=lambda _why: agent.stop_soon("client disconnected"),
    )


async def _exit_ending(agent: AgentProcess) -> LegEnd:
    """The agent closed its stdout: close the client with 1000 when it exited 0 (or is
    still running after ``grace``), else 1011 with the exit status as the reason."""
    try:
        rc = await asyncio.wait_for(agent.wait(), agent.grace)
    except TimeoutError:
        return LegEnd(1000, "", "peer", "eof")
    code, sig = exit_status(rc)
    if code == 0:
        return LegEnd(1000, "", "peer", "exit", {"exit_code": 0})
    reason = f"agent killed by signal {sig}" if sig else f"agent exited with status {code}"
    return LegEnd(1011, reason, "peer", "exit", {"exit_code": code})

"""The stdio leg of a stdio<->WebSocket bridge, and the agent process behind it.

What belongs here: :class:`LineEndpoint` — newline-delimited lines in and out of pipes, as
messages for the relay — and :class:`AgentProcess`, one agent per WebSocket connection.

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
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from acp_proxy.protocol.frames import Opcode
from acp_proxy.protocol.framing import LineFramer
from acp_proxy.record.link import Tap
from acp_proxy.transports.stdio import exit_status, write_all
from acp_proxy.transports.websocket import Ended, Ending, Message

__all__ = ["AgentProcess", "FdChannel", "LineEndpoint"]

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


EofEnding = Callable[[], Coroutine[Any, Any, Ending]]


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
        on_end: Callable[[Ending], None] | None = None,
    ) -> None:
        self.channel = channel
        self.side = side
        self._framer = LineFramer(max_line)
        self._pending: collections.deque[Message] = collections.deque()
        self._eof = False
        self._oversize = False
        self._eof_ending = eof_ending
        self._on_end = on_end
        self._override: Ending | None = None
        self._ended = False

    def interrupt(self, why: Ending) -> None:
        """End reading early (a signal): ``recv`` raises with ``why`` after what was read."""
        self._override = why
        if isinstance(self.channel, FdChannel):
            self.channel.stop()

    async def recv(self) -> Message:
        while not self._pending:
            if self._eof:
                if self._override is not None:
                    raise Ended(self._override)
                if self._eof_ending is not None:
                    raise Ended(await self._eof_ending())
                raise Ended(Ending(None, kind="eof"))
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
        self._pending.append(Message(opcode, raw, t, terminated, oversize))

    async def send(self, msg: Message) -> None:
        try:
            await self.channel.write_line(msg.data)
        except (OSError, ConnectionError):
            raise Ended(Ending(None, kind="eof", detail={"error": "write failed"})) from None

    async def end(self, why: Ending) -> None:
        if self._ended:
            return
        self._ended = True
        await self.channel.close_write()
        if self._on_end is not None:
            self._on_end(why)


# -- an agent process per connection ------------------------------------------------------


class AgentProcess:
    """One agent process: its pipes, its stderr relayed and recorded, its exit."""

    def __init__(self, proc: subprocess.Popen[bytes], tap: Tap, grace: float) -> None:
        self.proc, self.tap, self.grace = proc, tap, grace
        self.exited: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._tasks: set[asyncio.Task[None]] = set()
        self._spawned = time.monotonic_ns()
        self._terminating = False

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def endpoint(self, max_line: int) -> LineEndpoint:
        loop = asyncio.get_running_loop()
        p = self.proc
        assert p.stdin is not None and p.stdout is not None and p.stderr is not None
        out = asyncio.StreamReader(limit=_CHUNK)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(out), p.stdout)
        err = asyncio.StreamReader(limit=_CHUNK)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(err), p.stderr)
        wt, wp = await loop.connect_write_pipe(
            lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), p.stdin
        )
        writer = asyncio.StreamWriter(wt, wp, None, loop)
        self._spawn(self._watch())
        self._spawn(self._stderr(err))
        return LineEndpoint(
            _PipeChannel(out, writer),
            "agent",
            max_line,
            eof_ending=self._eof_ending,
            on_end=lambda _why: self._spawn(self._terminate_later()),
        )

    async def _watch(self) -> None:
        self.exited.set_result(await _wait_process(self.proc))

    async def _stderr(self, err: asyncio.StreamReader) -> None:
        while data := await err.read(_CHUNK):
            self.tap.stderr(data)
            with contextlib.suppress(OSError):
                write_all(2, data)

    async def _eof_ending(self) -> Ending:
        """The agent closed its stdout: close the client with 1000 when it exited 0 (or is
        still running after ``grace``), else 1011 with the exit status as the reason."""
        try:
            rc = await asyncio.wait_for(asyncio.shield(self.exited), self.grace)
        except TimeoutError:
            return Ending(1000, "", "peer", "eof")
        code, sig = exit_status(rc)
        if code == 0:
            return Ending(1000, "", "peer", "exit", {"exit_code": 0})
        reason = f"agent killed by signal {sig}" if sig else f"agent exited with status {code}"
        return Ending(1011, reason, "peer", "exit", {"exit_code": code})

    async def _terminate_later(self) -> None:
        """After the client went away and stdin was closed: SIGTERM after ``grace``,
        SIGKILL after as long again (the stdio relay's lifecycle)."""
        if self._terminating:
            return
        self._terminating = True
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                await asyncio.wait_for(asyncio.shield(self.exited), self.grace)
                return
            except TimeoutError:
                self.tap.event("terminate", signal=sig.name, reason="client disconnected")
                with contextlib.suppress(ProcessLookupError):
                    self.proc.send_signal(sig)

    async def finish(self) -> tuple[int, int | None]:
        """Wait for the exit (terminating if need be); record it."""
        if not self.exited.done():
            self._spawn(self._terminate_later())
        rc = await asyncio.shield(self.exited)
        for task in list(self._tasks):
            if task is not asyncio.current_task():
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(asyncio.shield(task), 2.0)
        code, sig = exit_status(rc)
        self.tap.event(
            "exit",
            returncode=rc,
            exit_code=code,
            signal=sig,
            runtime_ms=(time.monotonic_ns() - self._spawned) / 1e6,
        )
        return code, sig

    def kill_now(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()


def _set_once(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


async def _wait_process(proc: subprocess.Popen[bytes]) -> int:
    """Wait for a child without a thread: a pidfd (Linux) tells the loop when it exits."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        while proc.poll() is None:
            await asyncio.sleep(0.05)
        return proc.returncode
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    try:
        loop.add_reader(fd, _set_once, done)
        try:
            await done
        finally:
            loop.remove_reader(fd)
    finally:
        os.close(fd)
    return proc.wait()


# -- the listener: one capture per client connection --------------------------------------

"""An agent process from spawn to exit status: the one lifecycle every relay and replay uses.

What belongs here: :class:`AgentProcess` — starting the agent the way a shell would
(:func:`~acp_proxy.transports.stdio.spawn_agent`: 127 when the command is missing, 126 when
it cannot be executed) and recording its pid and the ``spawn`` event; waiting for its exit
without a thread (a pidfd tells the event loop); ending it once its client is gone —
``grace`` seconds to exit by itself, then SIGTERM, then SIGKILL after as long again (half a
second at the least), each signal recorded as a ``terminate`` event; and its exit status as
a shell reports it (128+N for signal N), recorded as the ``exit`` event. For the callers that
run on an event loop, also its stdout and stdin as asyncio streams and its stderr relayed to
ours and recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Coroutine, Sequence
from typing import Any

from acp_proxy.record.link import Tap
from acp_proxy.transports.stdio import CHUNK, exit_status, spawn_agent, write_all

__all__ = ["AgentProcess"]

_MIN_TERM_WAIT = 0.5  # SIGTERM gets at least this long before SIGKILL, whatever the grace
_DRAIN = 2.0  # how long the exit waits for the agent's stderr to be relayed


class AgentProcess:
    """One agent process: spawned, waited for, ended, its exit recorded on ``tap``."""

    def __init__(self, proc: subprocess.Popen[bytes], tap: Tap, grace: float) -> None:
        self.proc, self.tap, self.grace = proc, tap, grace
        self._spawned = time.monotonic_ns()
        self._exited: asyncio.Future[int] | None = None
        self._stopping: asyncio.Task[int] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @classmethod
    def spawn(
        cls, argv: Sequence[str], tap: Tap, *, grace: float, cwd: str | None = None
    ) -> AgentProcess:
        """Start ``argv`` with pipes and record it (raises
        :class:`~acp_proxy.errors.AgentSpawnError` with the shell's exit code)."""
        proc = spawn_agent(argv, cwd=cwd)
        tap.update(pid=proc.pid)
        tap.event("spawn", pid=proc.pid, argv=list(argv))
        return cls(proc, tap, grace)

    async def wait(self) -> int:
        """The process's return code, once it has exited."""
        if self._exited is None:
            self._exited = asyncio.ensure_future(_wait_process(self.proc))
        return await asyncio.shield(self._exited)

    def stop_soon(self, reason: str) -> None:
        """Start ending the process (:meth:`stop`) without waiting for it."""
        if self._stopping is None and not (self._exited is not None and self._exited.done()):
            self._stopping = asyncio.get_running_loop().create_task(self._stop(reason))

    async def stop(self, reason: str) -> int:
        """End the process: ``grace`` seconds to exit by itself, then SIGTERM, then SIGKILL;
        its return code. Once begun, calling it again only waits for the same end."""
        self.stop_soon(reason)
        if self._stopping is None:
            return await self.wait()
        return await asyncio.shield(self._stopping)

    async def _stop(self, reason: str) -> int:
        wait = self.grace
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                return await asyncio.wait_for(self.wait(), wait)
            except TimeoutError:
                self.tap.event("terminate", signal=sig.name, reason=reason)
                with contextlib.suppress(ProcessLookupError):
                    self.proc.send_signal(sig)
            wait = max(self.grace, _MIN_TERM_WAIT)
        return await self.wait()

    def kill_now(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()

    def record_exit(self, returncode: int) -> tuple[int, int | None]:
        """Record the ``exit`` event; the exit code as a shell reports it, and the signal."""
        code, sig = exit_status(returncode)
        self.tap.event(
            "exit",
            returncode=returncode,
            exit_code=code,
            signal=sig,
            runtime_ms=(time.monotonic_ns() - self._spawned) / 1e6,
        )
        return code, sig

    async def finish(self, reason: str) -> tuple[int, int | None]:
        """Wait for the exit (ending the process if need be), let its stderr be relayed,
        record the exit."""
        returncode = await self.stop(reason)
        for task in list(self._tasks):
            if task is not asyncio.current_task():
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(asyncio.shield(task), _DRAIN)
        return self.record_exit(returncode)

    # -- on an event loop: the pipes ------------------------------------------------------

    async def pipes(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """The agent's stdout and stdin as asyncio streams; from now on its stderr is
        relayed to ours and recorded."""
        loop = asyncio.get_running_loop()
        p = self.proc
        assert p.stdin is not None and p.stdout is not None and p.stderr is not None
        out = asyncio.StreamReader(limit=CHUNK)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(out), p.stdout)
        err = asyncio.StreamReader(limit=CHUNK)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(err), p.stderr)
        wt, wp = await loop.connect_write_pipe(
            lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), p.stdin
        )
        self._background(self._stderr(err))
        return out, asyncio.StreamWriter(wt, wp, None, loop)

    def _background(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _stderr(self, err: asyncio.StreamReader) -> None:
        while data := await err.read(CHUNK):
            self.tap.stderr(data)
            with contextlib.suppress(OSError):
                write_all(2, data)


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

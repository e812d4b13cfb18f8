"""An agent process from spawn to exit status: the one lifecycle every relay and replay uses.

What belongs here: :class:`AgentProcess` — starting the agent the way a shell would
(:func:`~acp_proxy.transports.stdio.spawn_agent`: 127 when the command is missing, 126 when
it cannot be executed) as the leader of a process group of its own, watched by the guard
(:mod:`acp_proxy.transports.guard`: the group is killed if we die); waiting for its exit
without a thread (a pidfd tells the event loop); ending it once its client is gone —
``grace`` seconds to exit by itself, then SIGTERM, then SIGKILL after as long again (half a
second at the least), each signal sent to the whole group; ending what is left of its group
once it has exited (:meth:`AgentProcess.end_group`: an npm launcher's native child, say,
that would otherwise hold its stdout open and outlive us); and its exit status as a shell
reports it (128+N for signal N). For the callers that run on an event loop, also its stdout
and stdin as asyncio streams and its stderr relayed to ours.

Nothing of the recording is here: each step is told to the process's :class:`Witness` as a
typed event (:mod:`acp_proxy.events`: ``spawn``, ``terminate``, ``exit``), with its pid and
its stderr; a relay hands its capture's tap, which records them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any, Protocol

from acp_proxy import events
from acp_proxy.transports.guard import guard
from acp_proxy.transports.stdio import CHUNK, exit_status, spawn_agent, write_all

__all__ = ["AgentProcess", "Witness", "group_members"]

_MIN_TERM_WAIT = 0.5  # SIGTERM gets at least this long before SIGKILL, whatever the grace
_DRAIN = 2.0  # how long the exit waits for the agent's stderr to be relayed
_LEFTOVER_WAIT = 0.5  # what is left of the group once the agent exited: time to go alone
_POLL = 0.05


class Witness(Protocol):
    """Who is told what happens to an agent process: its events, the capture columns it
    sets (``pid``) and what it writes on stderr."""

    def event(self, event: events.Event) -> None: ...
    def update(self, **fields: Any) -> None: ...
    def stderr(self, data: bytes) -> None: ...


class AgentProcess:
    """One agent process: spawned, waited for, ended, its exit told to ``witness``."""

    def __init__(self, proc: subprocess.Popen[bytes], witness: Witness, grace: float) -> None:
        self.proc, self.witness, self.grace = proc, witness, grace
        self._spawned = time.monotonic_ns()
        self._exited: asyncio.Future[int] | None = None
        self._stopping: asyncio.Task[int] | None = None
        self._group_ended: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.pgid = proc.pid  # spawned as the leader of its own group
        self.killed: list[str] = []  # what had to be signalled, for reports
        self.signalled = False  # the agent itself was signalled by us to end it

    @classmethod
    def spawn(
        cls,
        argv: Sequence[str],
        witness: Witness,
        *,
        grace: float,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> AgentProcess:
        """Start ``argv`` with pipes and tell ``witness`` (raises
        :class:`~acp_proxy.errors.AgentSpawnError` with the shell's exit code)."""
        proc = spawn_agent(argv, cwd=cwd, env=env)
        guard.watch(proc.pid)
        witness.update(pid=proc.pid)
        witness.event(events.Spawn(pid=proc.pid, argv=list(argv)))
        return cls(proc, witness, grace)

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
        """End the process and its group: ``grace`` seconds to exit by itself, then
        SIGTERM, then SIGKILL, then what is left of the group (:meth:`end_group`); its
        return code. Once begun, calling it again only waits for the same end."""
        self.stop_soon(reason)
        if self._stopping is None:
            returncode = await self.wait()
        else:
            returncode = await asyncio.shield(self._stopping)
        await self.end_group()
        return returncode

    async def _stop(self, reason: str) -> int:
        wait = self.grace
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                return await asyncio.wait_for(self.wait(), wait)
            except TimeoutError:
                self.witness.event(events.Terminate(signal=sig.name, reason=reason))
                self.signalled = True
                self.killed.append(f"{_describe(self.proc.pid)}: {sig.name} ({reason})")
                self.signal_group(sig)
            wait = max(self.grace, _MIN_TERM_WAIT)
        return await self.wait()

    def signal_group(self, sig: int) -> None:
        """Send ``sig`` to the agent's whole process group."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pgid, sig)

    def kill_now(self) -> None:
        self.signal_group(signal.SIGKILL)

    async def end_group(self) -> None:
        """Once the agent has exited: the processes it left in its group get a moment to
        exit alone, then SIGTERM, then SIGKILL; each signal is told. Then the guard
        forgets the group. Bounded: about a second and a half at the most."""
        if self._group_ended is None:
            self._group_ended = asyncio.get_running_loop().create_task(self._end_group())
        await asyncio.shield(self._group_ended)

    async def _end_group(self) -> None:
        await self.wait()
        waits = (_LEFTOVER_WAIT, _MIN_TERM_WAIT, _MIN_TERM_WAIT)
        for sig, wait in zip((signal.SIGTERM, signal.SIGKILL, None), waits, strict=True):
            left = await _until_empty(self.pgid, wait)
            if not left:
                break
            if sig is None:  # pragma: no cover - SIGKILL not honoured (uninterruptible I/O)
                return  # the guard still has the group: it tries again when we end
            names = [f"{pid} {name}" for pid, name in left]
            self.witness.event(
                events.Terminate(
                    signal=sig.name,
                    reason="left in the agent's group",
                    group=self.pgid,
                    pids=[pid for pid, _ in left],
                )
            )
            self.killed.append(f"{', '.join(names)}: {sig.name} (left in the agent's group)")
            self.signal_group(sig)
        guard.release(self.pgid)

    def tell_exit(self, returncode: int) -> tuple[int, int | None]:
        """Tell the ``exit`` event; the exit code as a shell reports it, and the signal."""
        code, sig = exit_status(returncode)
        self.witness.event(
            events.Exit(
                returncode=returncode,
                exit_code=code,
                signal=sig,
                runtime_ms=(time.monotonic_ns() - self._spawned) / 1e6,
            )
        )
        return code, sig

    async def finish(self, reason: str) -> tuple[int, int | None]:
        """Wait for the exit (ending the process and its group if need be), let its
        stderr be relayed, tell the exit."""
        returncode = await self.stop(reason)
        for task in list(self._tasks):
            if task is not asyncio.current_task():
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(asyncio.shield(task), _DRAIN)
        return self.tell_exit(returncode)

    # -- on an event loop: the pipes ------------------------------------------------------

    async def pipes(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """The agent's stdout and stdin as asyncio streams; from now on its stderr is
        relayed to ours and told to the witness."""
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
            self.witness.stderr(data)
            with contextlib.suppress(OSError):
                write_all(2, data)


def group_members(pgid: int) -> list[tuple[int, str]]:
    """The live processes of group ``pgid`` (pid, name); zombies are not counted."""
    members = []
    try:
        entries = os.listdir("/proc")
    except OSError:  # pragma: no cover - no /proc: ask the kernel whether any is left
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        except PermissionError:
            pass
        return [(pgid, "?")]
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        name_end = stat.rfind(b")")
        fields = stat[name_end + 2 :].split()
        if len(fields) > 2 and fields[0] != b"Z" and fields[2] == str(pgid).encode():
            name = stat[stat.find(b"(") + 1 : name_end].decode("utf-8", "replace")
            members.append((int(entry), name))
    return members


def _describe(pid: int) -> str:
    names = dict(group_members(pid))
    return f"{pid} {names[pid]}" if pid in names else str(pid)


async def _until_empty(pgid: int, wait: float) -> list[tuple[int, str]]:
    """Wait up to ``wait`` seconds for group ``pgid`` to have no live process; what is
    left then."""
    deadline = time.monotonic() + wait
    while True:
        left = group_members(pgid)
        if not left or time.monotonic() >= deadline:
            return left
        await asyncio.sleep(_POLL)


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

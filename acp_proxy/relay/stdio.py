"""Pump two endpoints with a tap.

What belongs here: wiring endpoints together and running a connection's lifecycle. The
stdio relay wraps an agent process: our stdin goes to the agent's stdin, the agent's stdout
to our stdout, its stderr to our stderr, each chunk forwarded as it arrives and a copy handed
to the recorder first (so frames are numbered before they are forwarded, and a response is
never numbered before its request).

Lifecycle: the agent's exit code becomes ours (a signal death is 128+N); the signals an
editor or a terminal sends us to end the agent (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,
SIGUSR2) are passed to the agent's process group, as they would have reached it without us;
a SIGKILL, which we cannot pass on, reaches it through the guard
(:mod:`acp_proxy.transports.guard`). When the client closes our stdin we close the agent's
and end the agent as every relay does (:class:`~acp_proxy.transports.process.AgentProcess`:
``grace`` seconds, then SIGTERM, then SIGKILL, to the group); once the agent has exited,
what it left in its group is ended too. The main thread waits for the agent on an event loop
while threads pump the bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Sequence
from types import FrameType

from acp_proxy import events
from acp_proxy.errors import AgentSpawnError
from acp_proxy.protocol.frames import Direction
from acp_proxy.record import chain
from acp_proxy.record.link import CaptureMeta, RecorderLink, Tap
from acp_proxy.transports.process import AgentProcess
from acp_proxy.transports.signals import STOP_SIGNALS
from acp_proxy.transports.stdio import pump, widen_pipe

__all__ = ["DEFAULT_GRACE", "record_stdio"]

DEFAULT_GRACE = 3.0
_FORWARDED_SIGNALS = (
    *STOP_SIGNALS,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)


def record_stdio(
    argv: Sequence[str],
    writer: RecorderLink,
    *,
    label: str | None = None,
    grace: float = DEFAULT_GRACE,
    stdin_fd: int = 0,
    stdout_fd: int = 1,
    stderr_fd: int = 2,
) -> int:
    """Run ``argv`` as the agent, relaying and recording; returns the exit code."""
    meta = CaptureMeta(transport="stdio", agent_command=list(argv), cwd=os.getcwd(), label=label)
    tap = writer.open_capture(meta)
    env = chain.join(tap, os.environ)  # a hop of a proxy chain says so; its program learns
    try:
        agent = AgentProcess.spawn(argv, tap, grace=grace, env=env)
    except AgentSpawnError as e:
        tap.event(events.SpawnFailed(error=str(e)))
        tap.close(exit_code=e.exit_code)
        raise
    for fd in (stdin_fd, stdout_fd):
        widen_pipe(fd)  # our own stdin and stdout, when the editor gave us pipes
    finishing = threading.Event()
    with _forward_signals(agent.proc, tap):
        fds = (stdin_fd, stdout_fd, stderr_fd)
        threads, returncode = asyncio.run(_until_exit(agent, tap, finishing, fds))
        for t in threads[1:]:  # agent stdout and stderr: drain what the agent left
            t.join(timeout=2.0)
        # Stop reading the client: what it sent until now is recorded (flagged as not
        # delivered, the agent being gone); nothing is read that would not be.
        finishing.set()
        threads[0].join(timeout=1.0)
    code, sig = agent.tell_exit(returncode)
    tap.close(exit_code=code, exit_signal=sig)
    return code


async def _until_exit(
    agent: AgentProcess, tap: Tap, finishing: threading.Event, fds: tuple[int, int, int]
) -> tuple[list[threading.Thread], int]:
    """Start the pumps and wait for the agent to exit, ending it once the client has closed
    our stdin; the pump threads and the agent's return code."""
    loop = asyncio.get_running_loop()

    def client_gone() -> None:  # in the client's pump thread
        with contextlib.suppress(RuntimeError):  # the loop is closed: the agent has exited
            loop.call_soon_threadsafe(agent.stop_soon, "client closed stdin")

    threads = _start_pumps(agent.proc, tap, client_gone, finishing, *fds)
    returncode = await agent.wait()
    await agent.end_group()
    return threads, returncode


def _start_pumps(
    proc: subprocess.Popen[bytes],
    tap: Tap,
    client_gone: Callable[[], None],
    finishing: threading.Event,
    stdin_fd: int,
    stdout_fd: int,
    stderr_fd: int,
) -> list[threading.Thread]:
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    agent_in, agent_out, agent_err = proc.stdin, proc.stdout, proc.stderr
    c2a, a2c = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT

    def client_to_agent() -> None:
        pump(
            stdin_fd,
            agent_in.fileno(),
            lambda d, t: tap.chunk(c2a, d, t),
            on_write_error=lambda e: _undelivered(
                tap, c2a, events.AgentStdinClosed(error=e.strerror)
            ),
            stop=finishing,
        )
        tap.end_stream(c2a)
        if finishing.is_set():
            tap.event(events.ClientNotRead(reason="the agent has exited"))
        else:
            tap.event(events.ClientEof())
        with contextlib.suppress(OSError):
            agent_in.close()
        client_gone()

    def agent_to_client() -> None:
        pump(
            agent_out.fileno(),
            stdout_fd,
            lambda d, t: tap.chunk(a2c, d, t),
            on_write_error=lambda e: _undelivered(
                tap, a2c, events.ClientStdoutClosed(error=e.strerror)
            ),
        )
        tap.end_stream(a2c)
        tap.event(events.AgentEof())
        _let_go(stdout_fd)  # the client sees the end now, not when we exit

    def agent_stderr() -> None:
        pump(agent_err.fileno(), stderr_fd, tap.stderr)

    threads = [
        threading.Thread(target=fn, name=f"acp-proxy-{fn.__name__}", daemon=True)
        for fn in (client_to_agent, agent_to_client, agent_stderr)
    ]
    for t in threads:
        t.start()
    return threads


def _let_go(fd: int) -> None:
    """Close our end of ``fd`` without freeing the descriptor number (it becomes
    /dev/null), so nothing written later can land in another file."""
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)


def _undelivered(tap: Tap, direction: Direction, event: events.Event) -> None:
    """The peer stopped reading: what follows is recorded, flagged as not delivered."""
    tap.not_delivered(direction)
    tap.event(event)


def _forward_signals(proc: subprocess.Popen[bytes], tap: Tap) -> contextlib.ExitStack:
    stack = contextlib.ExitStack()
    if threading.current_thread() is not threading.main_thread():
        return stack

    def forward(signum: int, _frame: FrameType | None) -> None:
        tap.event(events.Signal(signal=signal.Signals(signum).name, forwarded_to=proc.pid))
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signum)  # the agent leads its own group

    for s in _FORWARDED_SIGNALS:
        previous = signal.signal(s, forward)
        stack.callback(signal.signal, s, previous)
    return stack

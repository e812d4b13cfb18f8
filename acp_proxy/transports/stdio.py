"""stdio endpoints: spawning the agent and moving bytes between pipes.

What belongs here: starting the agent process the way a shell would (and failing the way a
shell does: 127 when the command is missing, 126 when it cannot be executed), and the pump
that copies a file descriptor to another chunk by chunk as the bytes arrive. A pump hands a
copy of each chunk to a callback before writing it on; it never parses or waits for a newline.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import select
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence

from acp_proxy.errors import AgentSpawnError

__all__ = [
    "CHUNK",
    "check_command",
    "exit_status",
    "pump",
    "spawn_agent",
    "widen_pipe",
    "write_all",
]

CHUNK = 1 << 20
_PIPE_SIZE = 1 << 20
_STOP_POLL_MS = 50
_F_SETPIPE_SZ = 1031  # fcntl.F_SETPIPE_SZ, Linux


def check_command(argv: Sequence[str]) -> None:
    """Refuse, as a shell would (127 not found, 126 not executable), an agent command that
    cannot be started: for servers that start it later, once per client."""
    program = argv[0]
    if os.sep not in program:
        if shutil.which(program) is None:
            raise AgentSpawnError(f"agent command not found: {program}", 127)
        return
    if not os.path.exists(program):
        raise AgentSpawnError(f"agent command not found: {program}", 127)
    if os.path.isdir(program) or not os.access(program, os.X_OK):
        raise AgentSpawnError(f"agent command cannot be executed: {program}", 126)


def spawn_agent(
    argv: Sequence[str], *, cwd: str | None = None, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start ``argv`` with piped stdin, stdout and stderr, as the leader of a new process
    group (its pid is the group's id), in ``env`` (default: ours)."""
    if not argv:
        raise AgentSpawnError("no agent command given (usage: acp-proxy record -- CMD ...)", 2)
    program = argv[0]
    if os.sep not in program and shutil.which(program) is None:
        raise AgentSpawnError(f"agent command not found: {program}", 127)
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
            cwd=cwd,
            env=env,
            # the leader of a group of its own: a signal meant for the agent reaches what
            # it started too, and the guard can end them all (acp_proxy.transports.guard)
            process_group=0,
        )
    except OSError as e:
        raise spawn_error(program, e) from e
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        assert pipe is not None
        widen_pipe(pipe.fileno())
    return proc


def spawn_error(program: str, e: OSError) -> AgentSpawnError:
    """Why ``program`` could not be started, with the exit code a shell gives (127: not
    found, 126: found but not executable): the one rule for every way we spawn an agent."""
    if isinstance(e, FileNotFoundError):
        return AgentSpawnError(f"agent command not found: {program}", 127)
    if isinstance(e, PermissionError):
        return AgentSpawnError(f"agent command cannot be executed: {program}: {e.strerror}", 126)
    code = 126 if e.errno in (errno.ENOEXEC, errno.EACCES, errno.EISDIR) else 127
    return AgentSpawnError(f"cannot start agent {program}: {e.strerror}", code)


def widen_pipe(fd: int) -> None:
    """Give a pipe a 1 MiB buffer (the kernel's default is 64 KiB), if ``fd`` is one.

    A flood then moves in large reads and writes instead of waking the writer, the relay
    and the reader for every 64 KiB; what crosses the pipe is unchanged."""
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, _F_SETPIPE_SZ, _PIPE_SIZE)


def exit_status(returncode: int) -> tuple[int, int | None]:
    """(exit code as a shell reports it, signal number or None)."""
    if returncode < 0:
        return 128 - returncode, -returncode
    return returncode, None


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def pump(
    src: int,
    dst: int,
    tap: Callable[[bytes, int], None],
    *,
    on_write_error: Callable[[OSError], None] | None = None,
    stop: threading.Event | None = None,
) -> None:
    """Copy ``src`` to ``dst`` until EOF, calling ``tap(chunk, t_ns)`` before each write.

    When ``dst`` fails (the reader went away) the pump keeps reading and recording, so the
    sender is not blocked and nothing it sent goes unrecorded. With ``stop``, reading ends
    soon after it is set, between two reads: whatever was read has been handed to ``tap``.
    """
    writable = True
    poller = None
    if stop is not None:
        poller = select.poll()
        poller.register(src, select.POLLIN | select.POLLHUP | select.POLLERR)
    while True:
        if poller is not None:
            assert stop is not None
            if stop.is_set():
                return
            if not poller.poll(_STOP_POLL_MS):
                continue
        try:
            data = os.read(src, CHUNK)
        except InterruptedError:  # pragma: no cover - PEP 475 retries for us
            continue
        except OSError:
            return
        if not data:
            return
        tap(data, time.monotonic_ns())
        if writable:
            try:
                write_all(dst, data)
            except OSError as e:
                writable = False
                if on_write_error is not None:
                    on_write_error(e)

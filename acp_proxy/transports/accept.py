"""Listening sockets, and accepting connections on them without falling over when the
process is out of file descriptors.

What belongs here: :func:`listening_sockets` (bound as ``loop.create_server`` binds
them: every address the host resolves to, ``SO_REUSEADDR``, IPv6 sockets IPv6-only),
:class:`Acceptor` (each accepted connection made an asyncio transport with a protocol of
the listener's), and :class:`Backoff`, the rule for a failed ``accept`` (values in,
decisions out), which the threaded web inspector follows as well.

Why not ``loop.create_server``: when ``accept`` fails with ``EMFILE`` or ``ENFILE``,
asyncio logs a traceback and schedules a retry for every connection still waiting — up
to a hundred per wake-up — so a process out of descriptors writes megabytes of tracebacks
a second. Here ``accept`` pauses instead (50 ms, doubling to 1 s), one line says so at
most every :data:`SAY_EVERY` seconds, and it resumes by itself once descriptors are free
again; the connections that arrived meanwhile wait in the kernel's queue and are then
served. What frees descriptors is the listeners' timeouts
(:class:`acp_proxy.transports.timeouts.Timeouts`): a connection that sends nothing is
closed after them.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import os
import socket
from collections.abc import Callable

__all__ = [
    "BACKLOG",
    "OUT_OF_RESOURCES",
    "SAY_EVERY",
    "Acceptor",
    "Backoff",
    "listening_sockets",
]

OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
SAY_EVERY = 10.0  # seconds between two lines saying accept is short of descriptors
BACKLOG = 100  # connections the kernel queues for us (asyncio's default)
_BATCH = 100  # connections accepted per wake-up before the loop does anything else


@dataclasses.dataclass(slots=True)
class Backoff:
    """What to do when ``accept`` fails for want of descriptors or memory: wait
    :attr:`first` seconds, twice that the next time, up to :attr:`last`; say so at most
    every :attr:`every` seconds; once a connection is accepted again, say that once."""

    first: float = 0.05
    last: float = 1.0
    every: float = SAY_EVERY
    delay: float = 0.0
    since: float | None = None  # when the shortage began
    said: float | None = None  # when it was last said
    failures: int = 0

    def failed(self, now: float, error: OSError) -> tuple[float, str | None]:
        """How long to stop accepting, and the line to print (or None)."""
        self.failures += 1
        if self.since is None:
            self.since = now
        self.delay = self.first if self.delay == 0 else min(self.last, self.delay * 2)
        if self.said is not None and now - self.said < self.every:
            return self.delay, None
        self.said = now
        name = errno.errorcode.get(error.errno or 0, "error")
        why = os.strerror(error.errno) if error.errno else str(error)
        return self.delay, (
            f"cannot accept connections: {name} ({why}); they wait in the queue meanwhile "
            f"(said at most every {self.every:g} s)"
        )

    def accepted(self, now: float) -> str | None:
        """A connection was accepted: the line saying the shortage is over, once."""
        if self.since is None:
            return None
        line = (
            f"accepting connections again, after {now - self.since:.1f} s "
            f"({self.failures} failed attempts)"
        )
        self.delay, self.since, self.said, self.failures = 0.0, None, None, 0
        return line


def listening_sockets(host: str, port: int) -> list[socket.socket]:
    """Non-blocking sockets listening on every address ``host`` resolves to (as
    ``loop.create_server`` binds them); raises ``OSError`` when one cannot be bound."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    out: list[socket.socket] = []
    seen: set[tuple[int, object]] = set()
    try:
        for family, kind, proto, _name, address in infos:
            if (family, address) in seen:
                continue
            seen.add((family, address))
            sock = socket.socket(family, kind, proto)
            out.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.listen(BACKLOG)
            sock.setblocking(False)
    except BaseException:
        for sock in out:
            sock.close()
        raise
    return out


class Acceptor:
    """Accepts connections on ``sockets`` until :meth:`close`; each becomes a transport
    whose protocol ``factory`` makes. ``say`` prints one line (a shortage, a recovery)."""

    def __init__(
        self,
        sockets: list[socket.socket],
        factory: Callable[[], asyncio.Protocol],
        say: Callable[[str], None],
    ) -> None:
        self.sockets = sockets
        self.factory = factory
        self.say = say
        self.backoff = Backoff()
        self.loop = asyncio.get_running_loop()
        self._paused: dict[int, asyncio.TimerHandle] = {}
        self._starting: set[asyncio.Task[object]] = set()
        self._serving = True
        for sock in sockets:
            self.loop.add_reader(sock.fileno(), self._ready, sock)

    def is_serving(self) -> bool:
        return self._serving

    def _ready(self, sock: socket.socket) -> None:
        for _ in range(_BATCH):
            try:
                conn, _peer = sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionAbortedError:
                continue  # the client gave up while it waited
            except OSError as e:
                self._pause(sock, e)
                return
            line = self.backoff.accepted(self.loop.time())
            if line is not None:
                self.say(line)
            self._start(conn)

    def _pause(self, sock: socket.socket, error: OSError) -> None:
        """Stop accepting on ``sock`` for a while (any other failure of ``accept`` is
        taken as one too: a listener must not spin on it, nor stop for good)."""
        delay, line = self.backoff.failed(self.loop.time(), error)
        if line is not None:
            self.say(line)
        fd = sock.fileno()
        self.loop.remove_reader(fd)
        self._paused[fd] = self.loop.call_later(delay, self._resume, sock)

    def _resume(self, sock: socket.socket) -> None:
        self._paused.pop(sock.fileno(), None)
        if self._serving:
            self.loop.add_reader(sock.fileno(), self._ready, sock)

    def _start(self, conn: socket.socket) -> None:
        conn.setblocking(False)
        task: asyncio.Task[object] = self.loop.create_task(
            self.loop.connect_accepted_socket(self.factory, conn)
        )
        self._starting.add(task)
        task.add_done_callback(self._started)

    def _started(self, task: asyncio.Task[object]) -> None:
        self._starting.discard(task)
        if not task.cancelled():
            task.exception()  # (a connection reset before its transport was made: gone)

    def close(self) -> None:
        """Stop accepting and close the listening sockets (accepted connections go on)."""
        if not self._serving:
            return
        self._serving = False
        for handle in self._paused.values():
            handle.cancel()
        self._paused.clear()
        for sock in self.sockets:
            with contextlib.suppress(ValueError, OSError):
                self.loop.remove_reader(sock.fileno())
            sock.close()

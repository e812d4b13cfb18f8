"""The web inspector's connections, held to the listeners' timeouts.

What belongs here: :class:`BoundedHandler`, the part of the request handler that reads
and writes the socket: a request head must come whole within the head timeout of the
connection's opening (or of its first byte, for a later request of a kept-alive
connection, which may wait the idle timeout for that byte), however slowly its bytes
trickle in; an answer is written in pieces, and a client that takes none of a piece for
the idle timeout is dropped; a request with a body (the inspector reads none) ends its
connection after the answer. :class:`acp_proxy.transports.timeouts.Timeouts` says what
the three timeouts are.

The standard library's handler reads with one socket timeout per ``recv``, which a client
sending a byte a second never reaches; here each read is given only what is left of the
phase's deadline.
"""

from __future__ import annotations

import io
import socket
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from acp_proxy.transports.timeouts import Timeouts, plain_answer

__all__ = ["BoundedHandler"]

_PIECE = 64 * 1024  # bytes written at once: the idle timeout bounds each piece


class _Reader(io.RawIOBase):
    """The socket's bytes, each ``recv`` given what is left until :attr:`deadline`.
    With :attr:`then_head` set, the first byte starts a new deadline that far ahead."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.deadline: float | None = None
        self.then_head: float | None = None
        self.got = 0  # bytes of the current head
        self.late = False  # its deadline passed

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                self.late = True
                raise TimeoutError("request head not received in time")
            self.sock.settimeout(left)
        try:
            n = self.sock.recv_into(buffer)
        except TimeoutError:
            self.late = True
            raise
        if n and self.then_head is not None:
            self.deadline, self.then_head = time.monotonic() + self.then_head, None
        self.got += n
        return n


class _Writer(io.RawIOBase):
    """Writes in pieces, each sent whole within the socket's timeout (the idle one)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        for start in range(0, len(view), _PIECE):
            self.sock.sendall(view[start : start + _PIECE])
        return len(view)


class BoundedHandler(BaseHTTPRequestHandler):
    """A request handler whose reads and writes are bounded by the ``timeouts`` of its
    server."""

    def setup(self) -> None:
        super().setup()
        self.timeouts: Timeouts = getattr(self.server, "timeouts", None) or Timeouts()
        self._opened = time.monotonic()
        self._first = True
        self._reader = _Reader(self.connection)
        self.rfile.close()  # the base class's, replaced by one that keeps the deadlines
        self.rfile = io.BufferedReader(self._reader)
        self.wfile = _Writer(self.connection)  # type: ignore[assignment]

    def handle_one_request(self) -> None:
        reader, t = self._reader, self.timeouts
        reader.got, reader.late = 0, False
        if self._first:
            self._first = False
            reader.deadline, reader.then_head = self._opened + t.head, None
        else:  # (a request already read ahead with the last one is timed as idle)
            reader.deadline, reader.then_head = time.monotonic() + t.idle, t.head
        super().handle_one_request()
        if reader.late and reader.got:  # part of a head came: say why (the base only logs)
            self._say_late()

    def _say_late(self) -> None:
        message = f"request head not received within {self.timeouts.head:g} s"
        try:
            self.connection.settimeout(1.0)
            self.connection.sendall(plain_answer(408, message))
        except OSError:
            pass

    def parse_request(self) -> bool:
        """The head is in: reads stop being timed, writes are (the idle timeout per
        piece); a request with a body closes its connection, the body never read."""
        ok = super().parse_request()
        self._reader.deadline = self._reader.then_head = None
        self.connection.settimeout(self.timeouts.idle)
        if ok:
            length = self.headers.get("Content-Length", "0").strip()
            if self.headers.get("Transfer-Encoding") or length != "0":
                self.close_connection = True
        return ok

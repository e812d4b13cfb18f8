"""A relay's handle on one capture: each call journals one record.

What belongs here: :class:`CaptureMeta` (what is known of a capture when it starts) and
:class:`Tap`, which turns what a relay reads — a chunk of a stdio stream, a WebSocket
message, the agent's stderr, an event — into one record of the journal's format
(:mod:`acp_proxy.record.core.wire`), numbered and placed in its stream, and hands it to the
relay's :class:`~acp_proxy.record.link.RecorderLink` under its lock. The relay forwards
the bytes only after the call returns (docs/recording.md).
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from acp_proxy.events import Event
from acp_proxy.protocol.frames import Direction, Opcode
from acp_proxy.record.core.wire import HEADER, Flag, Stream, Type
from acp_proxy.store.db import now_iso

__all__ = ["CaptureMeta", "Tap"]

_STREAM = {Direction.CLIENT_TO_AGENT: Stream.C2A, Direction.AGENT_TO_CLIENT: Stream.A2C}


class Journaled(Protocol):
    """What a tap needs of its link (:class:`~acp_proxy.record.link.RecorderLink`)."""

    lock: threading.Lock
    identity: str | None

    def send_locked(self, head: bytes, payload: bytes) -> None: ...

    def send_many_locked(self, records: list[tuple[bytes, bytes]]) -> None: ...

    def closed(self, tap: Tap) -> None: ...


@dataclass(slots=True)
class CaptureMeta:
    """What is known of a capture when it starts."""

    transport: str = "stdio"
    agent_command: list[str] | None = None
    cwd: str | None = None
    upstream_url: str | None = None
    listen_url: str | None = None
    label: str | None = None
    pid: int | None = None
    uid: str = field(default_factory=lambda: uuid.uuid4().hex)
    started_at: str = field(default_factory=now_iso)
    started_ns: int = field(default_factory=time.monotonic_ns)


class Tap:
    """The relay's handle on one capture. Thread-safe; each call writes one record."""

    __slots__ = (
        "_closed",
        "_last",
        "_rseq",
        "link",
        "meta",
        "number",
        "positions",
        "undelivered",
    )

    def __init__(self, link: Journaled, meta: CaptureMeta, number: int) -> None:
        self.link = link
        self.meta = meta
        self.number = number
        self.positions = {Stream.C2A: 0, Stream.A2C: 0, Stream.STDERR: 0}
        self.undelivered = {Stream.C2A: False, Stream.A2C: False}
        self._last = {Stream.C2A: 0, Stream.A2C: 0}  # where the latest chunk or message began
        self._rseq = 0
        self._closed = False

    def _send(
        self,
        type_: int,
        stream: int,
        flags: int,
        position: int,
        t_ns: int,
        payload: bytes,
    ) -> None:
        link = self.link
        with link.lock:
            self._rseq += 1
            head = HEADER.pack(
                len(payload), type_, stream, flags, self.number, self._rseq, position, t_ns
            )
            link.send_locked(head, payload)

    def _json(self, type_: int, body: dict[str, Any]) -> None:
        payload = orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS, default=str)
        self._send(type_, 0, 0, 0, time.monotonic_ns(), payload)

    def chunk(self, direction: Direction, data: bytes, t_ns: int | None = None) -> None:
        """Bytes read from a stdio stream, before they are written on."""
        s = _STREAM[direction]
        t = time.monotonic_ns() if t_ns is None else t_ns
        link = self.link
        with link.lock:
            self._rseq += 1
            pos = self._last[s] = self.positions[s]
            self.positions[s] = pos + len(data)
            flags = Flag.UNDELIVERED if self.undelivered[s] else 0
            head = HEADER.pack(len(data), Type.CHUNK, s, flags, self.number, self._rseq, pos, t)
            link.send_locked(head, data)

    def end_stream(self, direction: Direction) -> None:
        """The stream ended: a final line without ``\\n`` becomes an unterminated frame."""
        s = _STREAM[direction]
        self._send(Type.END, s, 0, self.positions[s], time.monotonic_ns(), b"")

    def message(
        self,
        direction: Direction,
        data: bytes,
        opcode: Opcode | None,
        t_ns: int | None = None,
        *,
        terminated: bool = False,
    ) -> None:
        """One whole message (WebSocket). ``terminated``: a stdio leg of a bridge carried it
        as a line ending in ``\\n``; ``opcode`` None: a piece of an over-long line."""
        s = _STREAM[direction]
        flags = 0
        if opcode is Opcode.BINARY:
            flags |= Flag.BINARY
        elif opcode is None:
            flags |= Flag.OVERSIZE
        if terminated:
            flags |= Flag.TERMINATED
        t = time.monotonic_ns() if t_ns is None else t_ns
        link = self.link
        with link.lock:
            if self.undelivered[s]:
                flags |= Flag.UNDELIVERED
            self._rseq += 1
            pos = self._last[s] = self.positions[s]
            self.positions[s] = pos + 1
            head = HEADER.pack(len(data), Type.MESSAGE, s, flags, self.number, self._rseq, pos, t)
            link.send_locked(head, data)

    def messages(self, direction: Direction, batch: list[tuple[Opcode, bytes, int]]) -> None:
        """Whole messages of one direction, read together (WebSocket, one network read):
        journaled in one write, as :meth:`message` journals one."""
        s = _STREAM[direction]
        link = self.link
        with link.lock:
            undelivered = Flag.UNDELIVERED if self.undelivered[s] else 0
            records = []
            rseq, pos, number = self._rseq, self.positions[s], self.number
            for opcode, data, t in batch:
                flags = undelivered | (Flag.BINARY if opcode is Opcode.BINARY else 0)
                rseq += 1
                records.append(
                    (HEADER.pack(len(data), Type.MESSAGE, s, flags, number, rseq, pos, t), data)
                )
                pos += 1
            self._rseq = rseq
            self._last[s] = pos - 1
            self.positions[s] = pos
            link.send_many_locked(records)

    def not_delivered(self, direction: Direction, position: int | None = None) -> None:
        """Writing to the peer failed: what was read from ``position`` (default: where the
        latest chunk or message began) on is recorded but was not delivered."""
        s = _STREAM[direction]
        if self.undelivered[s]:
            return
        self.undelivered[s] = True
        pos = self._last[s] if position is None else position
        self._send(Type.UNDELIVERED, s, 0, pos, time.monotonic_ns(), b"")

    def stderr(self, data: bytes, t_ns: int | None = None) -> None:
        t = time.monotonic_ns() if t_ns is None else t_ns
        link = self.link
        with link.lock:
            self._rseq += 1
            pos = self.positions[Stream.STDERR]
            self.positions[Stream.STDERR] = pos + len(data)
            head = HEADER.pack(
                len(data), Type.STDERR, Stream.STDERR, 0, self.number, self._rseq, pos, t
            )
            link.send_locked(head, data)

    def event(self, event: Event) -> None:
        """One event of the capture's story (:mod:`acp_proxy.events`), as its kind stores it."""
        self._json(Type.EVENT, {"kind": event.kind, "detail": event.detail()})

    def update(self, **fields: Any) -> None:
        """Set capture columns (pid, exit_code, ...)."""
        self._json(Type.UPDATE, fields)

    def close(self, **fields: Any) -> None:
        """End the capture: unfinished lines become frames, ``ended_at`` is set."""
        if self._closed:
            return
        self._closed = True
        fields.setdefault("ended_at", now_iso())
        fields.setdefault("ended_ns", time.monotonic_ns())
        fields["positions"] = {str(int(s)): p for s, p in self.positions.items()}
        self._json(Type.CLOSE, fields)
        self.link.closed(self)

    def open_payload(self) -> bytes:
        m = self.meta
        return orjson.dumps(
            {
                "uid": m.uid,
                "transport": m.transport,
                "agent_command": m.agent_command,
                "cwd": m.cwd,
                "upstream_url": m.upstream_url,
                "listen_url": m.listen_url,
                "pid": m.pid,
                "proxy_pid": os.getpid(),
                "proxy_start": self.link.identity,
                "started_at": m.started_at,
                "started_ns": m.started_ns,
                "label": m.label,
            },
            default=str,
        )

"""The records a relaying process sends its recorder, and how they are read (pure, sans-I/O).

What belongs here: the one definition of the byte format that carries traffic from a relay
to its recorder process: the records of the journal's segment files, which the relay
appends and the recorder follows (:mod:`acp_proxy.record.journal`; a pipe only rings the
recorder's doorbell), and which stay beside the database when they could not be written to
it yet. Nothing here does I/O.

A record is a fixed header followed by ``length`` payload bytes::

    length    u32   payload bytes that follow the header
    type      u8    a :class:`Type`
    stream    u8    a :class:`Stream` (which byte stream of the capture it belongs to)
    flags     u16   :class:`Flag` bits
    capture   u32   the relay's own number for the capture (declared by an ``OPEN``)
    rseq      u64   the record's number within its capture, from 1, never reused
    position  u64   where the payload starts in its stream: a byte offset (``CHUNK``,
                    ``STDERR``), a message number (``MESSAGE``), or the stream's final
                    position (``END``)
    t_ns      u64   monotonic clock when the relay read the bytes

``rseq`` and ``position`` make every consumer of records exact and idempotent: a record
already in the database is recognised and skipped (an import run twice adds nothing), and a
hole between two positions is loss that is written down with its exact byte range.
"""

from __future__ import annotations

import enum
import struct
from typing import NamedTuple

__all__ = [
    "HEADER",
    "HEADER_SIZE",
    "Flag",
    "Record",
    "RecordReader",
    "Stream",
    "Type",
    "encode_header",
]

HEADER = struct.Struct("<IBBHIQQQ")
HEADER_SIZE = HEADER.size  # 36
MAX_PAYLOAD = (1 << 32) - 1


class Type(enum.IntEnum):
    HELLO = 1  # JSON: the relaying process (pid, start identity, version)
    OPEN = 2  # JSON: a capture's metadata (uid, transport, command...); flag RESUME
    CHUNK = 3  # bytes of a stdio stream, as read
    MESSAGE = 4  # one whole message (WebSocket, or a line of a bridge's stdio leg)
    END = 5  # a stream ended; position = its final position
    STDERR = 6  # bytes of the agent's stderr
    EVENT = 7  # JSON: {"kind": ..., "detail": {...}}
    UPDATE = 8  # JSON: capture columns to set
    CLOSE = 9  # JSON: capture columns to set at its end, and "positions"
    UNDELIVERED = 10  # the bytes at position onwards could not be written to the peer
    LOST = 11  # JSON: a range that could not be written to the journal
    NEXT = 13  # the journal goes on in segment ``position``


class Stream(enum.IntEnum):
    NONE = 0
    C2A = 1  # client → agent
    A2C = 2  # agent → client
    STDERR = 3


class Flag:
    """The bits of a record's ``flags``. Plain ints, not an ``IntFlag``: every record is
    flagged by the relay and tested by the recorder, and an ``IntFlag``'s ``|`` and ``&``
    run the enum's Python code and build a new member each time (a microsecond a frame)."""

    NONE = 0
    BINARY = 1  # MESSAGE: a WebSocket binary message
    TERMINATED = 2  # MESSAGE: a bridge's stdio leg carried it as a line ending in \n
    OVERSIZE = 4  # MESSAGE: a piece of a stdio line over the size limit (not forwarded)
    UNDELIVERED = 8  # CHUNK/MESSAGE: the peer could not be written to any more


class Record(NamedTuple):
    type: int
    stream: int
    flags: int
    capture: int
    rseq: int
    position: int
    t_ns: int
    payload: bytes


def encode_header(
    type_: int,
    stream: int,
    flags: int,
    capture: int,
    rseq: int,
    position: int,
    t_ns: int,
    length: int,
) -> bytes:
    """The header of a record whose payload is ``length`` bytes."""
    return HEADER.pack(length, type_, stream, flags, capture, rseq, position, t_ns)


def encode(record: Record) -> bytes:
    """A whole record (header and payload) as bytes."""
    r = record
    return (
        encode_header(
            r.type, r.stream, r.flags, r.capture, r.rseq, r.position, r.t_ns, len(r.payload)
        )
        + r.payload
    )


class RecordReader:
    """Feed bytes, get whole records. Linear: each byte is looked at once; a record split
    across feeds is held until it is complete. ``pending`` says how many bytes are held."""

    __slots__ = ("_buf", "_need", "scans")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._need = HEADER_SIZE  # bytes the record at the start of _buf needs in all
        self.scans = 0  # how often held bytes were looked at again (stays small: linear)

    @property
    def pending(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes | memoryview) -> list[Record]:
        buf = self._buf
        if buf:
            buf += data
            if len(buf) < self._need:  # a long record still arriving: nothing to look at
                return []
            self.scans += 1
            source: bytes | bytearray | memoryview = buf
        else:
            source = data
        out: list[Record] = []
        with memoryview(source) as view:
            pos = 0
            end = len(view)
            unpack = HEADER.unpack_from
            need = HEADER_SIZE
            while end - pos >= HEADER_SIZE:
                length, type_, stream, flags, capture, rseq, position, t_ns = unpack(view, pos)
                stop = pos + HEADER_SIZE + length
                if stop > end:
                    need = HEADER_SIZE + length
                    break
                out.append(
                    Record(
                        type_,
                        stream,
                        flags,
                        capture,
                        rseq,
                        position,
                        t_ns,
                        bytes(view[pos + HEADER_SIZE : stop]),
                    )
                )
                pos = stop
            rest = bytes(view[pos:]) if not buf and pos < end else b""
        self._need = need
        if buf:
            if pos:
                del buf[:pos]
        elif rest:
            buf += rest
        return out

    def cut(self) -> int:
        """At the end of the input: how many bytes of an incomplete record were left over
        (a file cut short, say); they are dropped."""
        n = len(self._buf)
        self._buf.clear()
        return n

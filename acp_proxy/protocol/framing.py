"""Sans-I/O framing of a byte stream into newline-delimited frames.

What belongs here: turning the chunks a pipe delivers into exact slices, one per line,
without looking inside them. ACP over stdio delimits messages by ``\\n`` only
(docs/protocol.md §2.1); a ``\\r`` before it is part of the frame and kept, as is everything else.

Contract, proved by tests: for any input split into any chunks,
``b"".join(p.raw + (b"\\n" if p.terminated else b"") for p in pieces) == input``.

Scanning is linear: each byte is searched for ``\\n`` once, however the input is chunked.
A line longer than ``max_frame`` is emitted in pieces of ``max_frame`` bytes, each marked
``split`` and unterminated, so memory stays bounded and nothing is lost.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["DEFAULT_MAX_FRAME", "LineFramer", "Piece"]

DEFAULT_MAX_FRAME = 256 * 1024 * 1024


class Piece(NamedTuple):
    """A frame's exact bytes (without the terminator) and how it ended."""

    raw: bytes
    terminated: bool
    split: bool = False  # cut because it reached max_frame; more of the same line follows


class LineFramer:
    """Feed chunks, get complete lines; ``end()`` returns what remains at EOF."""

    __slots__ = ("_buf", "_max")

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        if max_frame < 1:
            raise ValueError("max_frame must be positive")
        self._buf = bytearray()
        self._max = max_frame

    @property
    def pending(self) -> int:
        """Bytes held for an unfinished line."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[Piece]:
        out: list[Piece] = []
        if not data:
            return out
        start = 0
        if self._buf:
            nl = data.find(b"\n")
            if nl < 0:
                self._buf += data
                self._cut(out)
                return out
            self._buf += data[:nl]
            self._cut(out)
            self._emit_buffer(out)
            start = nl + 1
        end = data.rfind(b"\n", start)
        if end >= 0:
            for line in data[start:end].split(b"\n"):
                if len(line) > self._max:
                    self._buf += line
                    self._cut(out)
                    self._emit_buffer(out)
                else:
                    out.append(Piece(line, True))
            start = end + 1
        if start < len(data):
            self._buf += data[start:]
            self._cut(out)
        return out

    def end(self) -> list[Piece]:
        """The unterminated final line, if any (a stream may end without ``\\n``)."""
        if not self._buf:
            return []
        raw = bytes(self._buf)
        self._buf.clear()
        return [Piece(raw, False)]

    def _emit_buffer(self, out: list[Piece]) -> None:
        out.append(Piece(bytes(self._buf), True))
        self._buf.clear()

    def _cut(self, out: list[Piece]) -> None:
        while len(self._buf) > self._max:
            out.append(Piece(bytes(self._buf[: self._max]), False, True))
            del self._buf[: self._max]

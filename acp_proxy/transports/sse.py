"""Server-sent events cut out of a byte stream, for recording only (no I/O).

What belongs here: :class:`SseFramer`, which is fed the body of a ``text/event-stream``
response chunk by chunk, as it is forwarded (the forwarding never waits for it), and gives
back each event: its exact bytes and the value of its ``data`` field, the JSON-RPC message
it carries. Lines end with ``\\r\\n``, ``\\n`` or ``\\r``; an empty line ends an event;
``data`` lines are joined with ``\\n`` (the event-stream format's rule). Comments
(keep-alives), ``id:``, ``retry:`` and ``event:`` lines are kept in the event's bytes and
not interpreted.

An event whose bytes grow over ``max_size`` is not held whole: its bytes are handed on in
pieces (``oversize``) as they come, so memory stays bounded, like an over-long stdio line.
"""

from __future__ import annotations

import dataclasses
import re

__all__ = ["SseEvent", "SseFramer", "canonical"]

# a line end followed by a line end: an empty line (a \r before a \n is one line end)
_BLANK = re.compile(rb"(?:\r\n|\n|\r(?!\n))(?:\r\n|\n|\r)")


@dataclasses.dataclass(frozen=True, slots=True)
class SseEvent:
    """One event as it crossed the wire. ``data`` is None when it had no ``data`` field
    (a comment, a keep-alive); ``oversize``: a piece of an event over the size limit."""

    raw: bytes
    data: bytes | None
    oversize: bool = False
    complete: bool = True  # False: what was left when the stream ended mid-event


def canonical(event: SseEvent) -> bool:
    """Whether ``raw`` is exactly ``data: <data>\\n\\n``: the event can then be rebuilt
    from its message alone."""
    d = event.data
    return d is not None and event.complete and event.raw == b"data: " + d + b"\n\n"


class SseFramer:
    def __init__(self, max_size: int) -> None:
        self.max_size = max_size
        self._buf = bytearray()  # the event so far
        self._scan = 0  # where the next line of the current event starts in _buf
        self._data: list[bytes] | None = None
        self._oversize = False
        self._tail = b""  # the last bytes of an oversize event, to find its end

    def feed(self, chunk: bytes) -> list[SseEvent]:
        out: list[SseEvent] = []
        if self._oversize:
            self._feed_oversize(chunk, out)
            return out
        self._buf += chunk
        self._lines(out)
        return out

    def end(self) -> SseEvent | None:
        """The stream ended: what is left of an unfinished event (dispatched by nobody)."""
        rest = bytes(self._buf)
        self._buf.clear()
        self._scan = 0
        data = b"\n".join(self._data) if self._data is not None else None
        self._data = None
        if not rest:
            return None
        return SseEvent(rest, data, self._oversize, complete=False)

    def _lines(self, out: list[SseEvent]) -> None:
        buf = self._buf
        while True:
            start = self._scan
            lf = buf.find(b"\n", start)
            cr = buf.find(b"\r", start, lf if lf >= 0 else len(buf))
            if cr >= 0:
                if cr + 1 == len(buf):
                    break  # a \r at the end: is a \n next?
                line_end, nxt = cr, cr + (2 if buf[cr + 1] == 0x0A else 1)
            elif lf >= 0:
                line_end, nxt = lf, lf + 1
            else:
                break
            line = bytes(buf[start:line_end])
            self._scan = nxt
            if not line:
                raw = bytes(buf[:nxt])
                del buf[:nxt]
                self._scan = 0
                data = b"\n".join(self._data) if self._data is not None else None
                self._data = None
                out.append(SseEvent(raw, data))
                continue
            self._field(line)
        if len(buf) > self.max_size:
            self._oversize = True
            out.append(SseEvent(bytes(buf), None, oversize=True))
            self._keep_tail(buf)

    def _keep_tail(self, buf: bytearray) -> None:
        # only the last line ends matter, to find the empty line that ends the event
        self._tail = bytes(buf[-3:])
        buf.clear()
        self._scan = 0
        self._data = None

    def _feed_oversize(self, chunk: bytes, out: list[SseEvent]) -> None:
        """Find the empty line that ends the event; hand on everything before it."""
        joined = self._tail + chunk
        offset = len(self._tail)
        for m in _BLANK.finditer(joined):
            if m.end() <= offset:
                continue
            if m.end() == len(joined) and joined.endswith(b"\r"):
                break  # a \r at the end: is a \n next?
            end = m.end() - offset
            out.append(SseEvent(chunk[:end], None, oversize=True))
            self._oversize = False
            self._tail = b""
            self._buf = bytearray()
            rest = chunk[end:]
            if rest:
                out.extend(self.feed(rest))
            return
        if chunk:
            out.append(SseEvent(chunk, None, oversize=True))
        self._tail = joined[-3:]

    def _field(self, line: bytes) -> None:
        name, colon, value = line.partition(b":")
        if not colon or name != b"data":
            return
        if value.startswith(b" "):
            value = value[1:]
        if self._data is None:
            self._data = []
        self._data.append(value)

"""The recorder's logic: records in, database rows out (pure, sans-I/O).

What belongs here: :class:`Core`, which takes the records a relay sent (:mod:`.wire`) in
order and returns typed rows (:mod:`.rows`): it numbers frames, cuts stdio streams into
lines, classifies each frame, pairs responses with requests
(:mod:`acp_proxy.protocol.pairing`), learns the protocol version and peers from
``initialize``, and writes down every hole in a stream as a gap. No threads, no pipes,
no SQLite: the recorder process around it (:mod:`acp_proxy.record.recorder`) does that.

Exactness (docs/recording.md): every ``CHUNK``, ``MESSAGE`` and ``STDERR`` record says where
its payload starts in its stream. Bytes before the point the capture already reached are
skipped (they are recorded already: an import run twice adds nothing); a payload that
starts after it leaves a hole, written down as a :class:`GapRow` with its exact range, and
the line cut by the hole is kept, flagged ``truncated``. Other records carry ``rseq``; one
at or below what the database already holds is skipped.

Peer content never stops the core: classification never raises, and a frame whose fields
cannot be derived is still stored, flagged.
"""

from __future__ import annotations

from typing import Any

from acp_proxy.events import Event
from acp_proxy.protocol.framing import DEFAULT_MAX_FRAME
from acp_proxy.protocol.skim import SKIM_ABOVE
from acp_proxy.record.core.derive import frame_rows
from acp_proxy.record.core.rows import (
    CaptureFields,
    EventRow,
    GapRow,
    MarkRow,
    OpenRow,
    Row,
    StderrRow,
)
from acp_proxy.record.core.state import (
    CaptureState,
    Lookup,
    StreamState,
    capture_columns,
    load_object,
)
from acp_proxy.record.core.wire import Flag, Record, Stream, Type

__all__ = ["Core"]

_DIR_TEXT = {Stream.C2A: "c2a", Stream.A2C: "a2c", Stream.STDERR: "stderr"}


class Core:
    """Feed records in order with :meth:`feed`; :meth:`take` returns the rows made since
    the last call, ending with each touched capture's progress."""

    def __init__(self, lookup: Lookup | None = None, *, max_frame: int = DEFAULT_MAX_FRAME):
        self._lookup = lookup
        self._max = max_frame
        self._captures: dict[int, CaptureState] = {}
        self._rows: list[Row] = []
        self._index = 0

    # -- input ---------------------------------------------------------------------------

    def feed(self, rec: Record, index: int = 0) -> None:
        """Take one record; ``index`` is its place in the input (for :meth:`oldest_needed`)."""
        self._index = index
        t = rec.type
        if t == Type.OPEN:
            self._open(rec.capture, load_object(rec.payload), rec)
            return
        cap = self._captures.get(rec.capture)
        if cap is None:
            cap = self._restore(rec.capture)
            if cap is None:
                return  # a capture never opened in this journal: nothing to attach it to
        if rec.t_ns > cap.last_t:
            cap.last_t = rec.t_ns
        if t == Type.CHUNK:
            self._chunk(cap, rec)
            return
        if t == Type.MESSAGE:
            self._message(cap, rec)
            return
        if t == Type.STDERR:
            self._stderr(cap, rec)
            return
        if rec.rseq and rec.rseq <= cap.skip_rseq:
            return  # in the database already
        cap.rseq = max(cap.rseq, rec.rseq)
        cap.touched = True
        if t == Type.EVENT:
            body = load_object(rec.payload)
            detail = body.get("detail")
            self._rows.append(
                EventRow(
                    cap.uid,
                    self._rel(cap, rec.t_ns),
                    str(body.get("kind", "event")),
                    detail if isinstance(detail, dict) else None,
                )
            )
        elif t == Type.UPDATE:
            cap.fields.update(capture_columns(load_object(rec.payload)))
        elif t == Type.END:
            self._end(cap, rec.stream, rec.position, rec.t_ns)
        elif t == Type.CLOSE:
            self._close(cap, load_object(rec.payload), rec.t_ns)
        elif t == Type.UNDELIVERED:
            self._undelivered(cap, rec)
        elif t == Type.LOST:
            self._lost(cap, rec)

    def finish(
        self, ended_at: str, reason: str = "proxy_gone", noticed_ns: int | None = None
    ) -> None:
        """The input ended: a capture its relay did not close is closed here (the relay
        died), and every unfinished line becomes a frame flagged ``unterminated``.

        ``noticed_ns`` is when the end was seen, on the relay's monotonic clock, the moment
        ``ended_at`` names: a relay that died after a silence lived until about then, not
        until its last record. Without it (a journal brought in later, when that moment says
        nothing of the relay), the capture ends at its last record."""
        for cap in self._captures.values():
            if cap.closed:
                continue
            for s in list(cap.streams):
                self._flush(cap, s, cap.streams[s], ("unterminated",), cap.last_t)
            end = cap.last_t if noticed_ns is None else max(cap.last_t, noticed_ns)
            cap.fields.update(end_reason=reason, ended_at=ended_at, ended_ns=self._rel(cap, end))
            cap.closed = True
            cap.touched = True

    def note(self, event: Event, t_ns: int) -> None:
        """An event of the recorder's own (a warning nobody was left to read on stderr),
        for every capture of this input, at ``t_ns`` (the relay's monotonic clock)."""
        for cap in self._captures.values():
            self._rows.append(EventRow(cap.uid, self._rel(cap, t_ns), event.kind, event.detail()))
            cap.touched = True

    def take(self) -> list[Row]:
        """The rows made since the last call; each touched capture's progress last."""
        rows = self._rows
        self._rows = []
        for cap in self._captures.values():
            if not cap.touched:
                continue
            cap.touched = False
            rows.append(CaptureFields(cap.uid, cap.progress()))
        return rows

    def oldest_needed(self) -> int | None:
        """The input index of the oldest record an unfinished line still holds bytes of."""
        found = [
            st.pending_index
            for cap in self._captures.values()
            for st in cap.streams.values()
            if st.parts and st.pending_index is not None
        ]
        return min(found) if found else None

    def captures(self) -> dict[int, str]:
        """The captures this input has opened: their number and uid."""
        return {n: c.uid for n, c in self._captures.items()}

    # -- records -------------------------------------------------------------------------

    def _open(self, number: int, meta: dict[str, Any], rec: Record) -> None:
        uid = str(meta.get("uid") or "")
        if not uid:
            return
        known = self._captures.get(number) or self._restore(number)
        if known is not None and known.uid == uid:
            return  # in the database already (this part of the journal is read again)
        started = meta.get("started_ns")
        cap = CaptureState(uid, int(started) if isinstance(started, int) else rec.t_ns)
        self._captures[number] = cap
        # its number in this journal: how a later recorder finds it again (lookup)
        self._rows.append(OpenRow(uid, {**meta, "journal_number": number}))
        cap.touched = True

    def _restore(self, number: int) -> CaptureState | None:
        """A capture of this journal the database knows (its recorder stopped, or this
        part of the journal is read again): carry on from where the database stands."""
        found = self._lookup(number) if self._lookup is not None else None
        if found is None:
            return None
        cap = self._captures[number] = CaptureState.resumed(*found)
        return cap

    def _rel(self, cap: CaptureState, t_ns: int) -> int:
        return t_ns - cap.started_ns

    def _advance(
        self, cap: CaptureState, s: int, st: StreamState, rec: Record, size: int, reason: str
    ) -> int:
        """Bytes (or messages) of ``rec`` already recorded, to skip; a hole before it is
        written down first."""
        if rec.position < st.position:
            return min(size, st.position - rec.position)
        if rec.position > st.position:
            self._hole(cap, s, st, st.position, rec.position, None, reason, rec.t_ns)
        return 0

    def _hole(
        self,
        cap: CaptureState,
        s: int,
        st: StreamState,
        start: int,
        end: int,
        frames: int | None,
        reason: str,
        t_ns: int,
    ) -> None:
        self._flush(cap, s, st, ("truncated",), t_ns)
        self._rows.append(
            GapRow(
                cap.uid,
                _DIR_TEXT.get(Stream(s), str(s)),
                start,
                end,
                frames,
                reason,
                cap.seq - 1 if cap.seq else None,
                self._rel(cap, t_ns),
            )
        )
        st.position = st.pending_start = end
        st.resumed = s != Stream.STDERR
        cap.touched = True

    def _chunk(self, cap: CaptureState, rec: Record) -> None:
        s = rec.stream
        st = cap.stream(s)
        data = rec.payload
        skip = self._advance(cap, s, st, rec, len(data), "not received")
        if skip:
            if skip >= len(data):
                return
            data = data[skip:]
        cap.touched = True
        if rec.flags & Flag.UNDELIVERED:
            st.undelivered = True
        st.chunk_position = st.position
        st.chunk_first_seq = None
        t = rec.t_ns
        position = st.position
        st.position = position + len(data)
        nl = data.find(b"\n")
        if nl < 0:
            self._hold(cap, s, st, data, position, t)
            return
        start = 0
        if st.parts:  # the first newline ends the line in progress
            self._hold(cap, s, st, data[:nl], position, t)
            self._flush(cap, s, st, (), t, terminated=True)
            start = nl + 1
        end = data.rfind(b"\n")  # the lines data[start:end] are complete
        if start <= end:
            pos = position + start
            frame, rows = frame_rows, self._rows
            for line in data[start:end].split(b"\n"):
                if len(line) > self._max:
                    self._hold(cap, s, st, line, pos, t)
                    self._flush(cap, s, st, (), t, terminated=True)
                else:
                    frame(cap, s, st, line, True, None, t, (), None, rows)
                pos += len(line) + 1
            start = end + 1
        if start < len(data):
            self._hold(cap, s, st, data[start:], position + start, t)

    def _hold(
        self, cap: CaptureState, s: int, st: StreamState, data: bytes, position: int, t: int
    ) -> None:
        """Keep part of an unfinished line; a line over ``max_frame`` is cut into pieces."""
        for piece in st.hold(data, position, self._index, self._max):
            frame_rows(cap, s, st, piece, False, None, t, ("split",), None, self._rows)

    def _flush(
        self,
        cap: CaptureState,
        s: int,
        st: StreamState,
        flags: tuple[str, ...],
        t: int | None,
        *,
        terminated: bool = False,
    ) -> None:
        """The unfinished line becomes a frame (it ended, or the stream did)."""
        if not st.parts:
            st.split = False
            return
        parts = st.parts
        st.parts, st.pending_len = [], 0
        if st.split and not terminated:
            flags = (*flags, "split")
        st.split = False
        t_abs = t if t is not None else 0
        if len(parts) > 1 and sum(map(len, parts)) >= SKIM_ABOVE:
            # a huge line stays in the pieces that brought it: joining them would hold it
            # twice, and the database takes it piece by piece
            frame_rows(cap, s, st, b"", terminated, None, t_abs, flags, parts, self._rows)
        else:
            raw = parts[0] if len(parts) == 1 else b"".join(parts)
            frame_rows(cap, s, st, raw, terminated, None, t_abs, flags, None, self._rows)
        st.pending_start = st.position

    def _message(self, cap: CaptureState, rec: Record) -> None:
        s = rec.stream
        st = cap.stream(s)
        if self._advance(cap, s, st, rec, 1, "not received"):
            return
        cap.touched = True
        st.position = rec.position + 1
        st.pending_start = st.position
        flags = rec.flags
        if flags & Flag.UNDELIVERED:
            st.undelivered = True
        opcode = None if flags & Flag.OVERSIZE else ("binary" if flags & Flag.BINARY else "text")
        extra = ("split",) if flags & Flag.OVERSIZE else ()
        st.chunk_position = rec.position
        st.chunk_first_seq = None
        terminated = bool(flags & Flag.TERMINATED)
        frame_rows(cap, s, st, rec.payload, terminated, opcode, rec.t_ns, extra, None, self._rows)

    def _stderr(self, cap: CaptureState, rec: Record) -> None:
        st = cap.stream(Stream.STDERR)
        data = rec.payload
        skip = self._advance(cap, Stream.STDERR, st, rec, len(data), "not received")
        if skip:
            if skip >= len(data):
                return
            data = data[skip:]
        st.position += len(data)
        cap.touched = True
        self._rows.append(StderrRow(cap.uid, self._rel(cap, rec.t_ns), data))

    def _end(self, cap: CaptureState, s: int, final: int, t: int) -> None:
        st = cap.stream(s)
        if final > st.position:
            self._hole(cap, s, st, st.position, final, None, "not received", t)
        self._flush(cap, s, st, ("unterminated",), t)
        st.ended = True

    def _close(self, cap: CaptureState, body: dict[str, Any], t: int) -> None:
        positions = body.pop("positions", None)
        if isinstance(positions, dict):
            for key, final in positions.items():
                if str(key).isdigit() and isinstance(final, int):
                    st = cap.stream(int(key))
                    if final > st.position:
                        self._hole(cap, int(key), st, st.position, final, None, "not received", t)
        for s, st in cap.streams.items():
            if st.parts:
                self._flush(cap, s, st, ("unterminated",), t)
        fields = capture_columns(body)
        if isinstance(fields.get("ended_ns"), int):
            fields["ended_ns"] = self._rel(cap, fields["ended_ns"])
        fields.setdefault("end_reason", "closed")
        cap.fields.update(fields)
        cap.closed = True

    def _undelivered(self, cap: CaptureState, rec: Record) -> None:
        st = cap.stream(rec.stream)
        st.undelivered = True
        if st.chunk_first_seq is not None and rec.position <= st.chunk_position:
            self._rows.append(MarkRow(cap.uid, st.chunk_first_seq, cap.seq - 1, "undelivered"))

    def _lost(self, cap: CaptureState, rec: Record) -> None:
        body = load_object(rec.payload)
        start, end = body.get("start"), body.get("end")
        if not (isinstance(start, int) and isinstance(end, int)):
            return
        s = rec.stream
        st = cap.stream(s)
        if end <= st.position:
            return
        frames = body.get("frames")
        self._hole(
            cap,
            s,
            st,
            max(start, st.position),
            end,
            frames if isinstance(frames, int) else None,
            str(body.get("reason") or "not stored"),
            rec.t_ns,
        )

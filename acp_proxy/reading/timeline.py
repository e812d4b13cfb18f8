"""A capture's timeline: its frames, events and stderr in the order they happened.

What belongs here: the window a timeline is read in (from a frame or a time, up to a
frame: :class:`Timeline`), the frames a filter keeps, read from a cursor (a capture is
never all in memory), the events and the agent's stderr merged with them in time order as
typed items (:class:`FrameItem`, :class:`EventItem`, :class:`StderrItem`; at the same
instant an event comes first, stderr last), the findings of ``acp-proxy check`` by frame,
the requests nothing answered, and reading ``--since`` (:func:`since_ns`).
"""

from __future__ import annotations

import dataclasses
import heapq
import re
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any, Protocol

from acp_proxy.check.core.findings import Finding
from acp_proxy.errors import UsageError
from acp_proxy.reading.capture import OpenCapture
from acp_proxy.store.numbers import INT64_MAX
from acp_proxy.store.reader import Store, StoredFrame
from acp_proxy.store.scan import matching_seqs

__all__ = ["EventItem", "FrameItem", "Item", "StderrItem", "Timeline", "since_ns"]


@dataclasses.dataclass(frozen=True, slots=True)
class EventItem:
    t_ns: int
    event: dict[str, Any]


@dataclasses.dataclass(frozen=True, slots=True)
class FrameItem:
    t_ns: int
    frame: StoredFrame


@dataclasses.dataclass(frozen=True, slots=True)
class StderrItem:
    t_ns: int
    data: bytes


Item = EventItem | FrameItem | StderrItem


class ScanProgress(Protocol):
    """Told how many frames a scan has read (the command line draws it on stderr)."""

    def advance(self, n: int = 1) -> None: ...
    def clear(self) -> None: ...


_RANK = {EventItem: 0, FrameItem: 1, StderrItem: 2}  # at one instant: events, frames, stderr


class Timeline:
    """The timeline of ``cap`` from frame ``from_seq`` (or from ``since``, ns into the
    capture) up to frame ``at``; ``keep`` says which frames are shown. Whether the capture
    has ended (:attr:`ended`) is asked once, when the timeline is made: what is read of it
    agrees on it throughout."""

    def __init__(
        self,
        cap: OpenCapture,
        *,
        from_seq: int | None = None,
        at: int | None = None,
        since: int | None = None,
        keep: Callable[[StoredFrame], bool] | None = None,
        scan: Callable[[bytes], bool] | None = None,
        progress: ScanProgress | None = None,
    ) -> None:
        self.cap = cap
        self.from_seq, self.at, self.since, self.keep = from_seq, at, since, keep
        self.scan, self.progress = scan, progress
        self.ended = cap.ended
        self.first_t, self.last_t = self._bounds()

    def frames(self) -> Iterator[StoredFrame]:
        """The frames in the window that ``keep`` keeps, from a cursor; once the capture has
        ended, a request nothing answered is flagged ``unanswered``."""
        after = -1 if self.from_seq is None else self.from_seq - 1
        if self.scan is not None and isinstance(self.cap.store, Store):
            found = self._scanned(self.cap.store, after)
        else:
            found = self.cap.store.frames(self.cap.id, after_seq=after, upto_seq=self.at,
                                          from_t_ns=self.since, ended=self.ended)  # fmt: skip
            if self.scan is not None:  # a jsonl export: its frames are in memory already
                scan = self.scan
                found = (f for f in found if scan(f.raw))
        return found if self.keep is None else (f for f in found if self.keep(f))

    def _scanned(self, store: Store, after: int) -> Iterator[StoredFrame]:
        """The frames whose exact bytes pass ``scan``: the bytes alone are read and tested,
        the frames that pass read whole (most frames of a large capture fail a ``--grep``)."""
        assert self.scan is not None
        cid, progress = self.cap.id, self.progress
        hits = matching_seqs(store.conn, cid, self.scan, after_seq=after, upto_seq=self.at,
                             from_t_ns=self.since,
                             advance=None if progress is None else progress.advance)  # fmt: skip
        for seqs in hits:
            if progress is not None:
                progress.clear()  # the frames found are printed: no line half drawn over them
            yield from store.frames_at(cid, seqs, ended=self.ended)
        if progress is not None:
            progress.clear()

    def items(
        self, frames: Iterable[StoredFrame] = (), *, events: bool = True, stderr: bool = True
    ) -> Iterator[Item]:
        """``frames``, with the events and the stderr of the window (each when asked), in
        time order."""
        streams: list[Iterator[Item]] = [(FrameItem(f.frame.t_ns, f) for f in frames)]
        if events:
            evs = (EventItem(ev["t_ns"], ev) for ev in self.cap.store.events(self.cap.id))
            streams.append(self._bounded(evs))
        if stderr:
            said = (StderrItem(t, data) for t, data in self.cap.store.stderr(self.cap.id))
            streams.append(self._bounded(said))
        return heapq.merge(*streams, key=lambda item: (item.t_ns, _RANK[type(item)]))

    def _bounded(self, items: Iterator[Item]) -> Iterator[Item]:
        for item in items:
            if self.first_t is not None and item.t_ns < self.first_t:
                continue
            if self.last_t is not None and item.t_ns > self.last_t:
                return
            yield item

    def _bounds(self) -> tuple[int | None, int | None]:
        """The span of time the events and stderr are shown in: from ``since`` or the time
        of frame ``from_seq``, to the time of frame ``at``."""
        store, cid = self.cap.store, self.cap.id
        first_t = self.since
        if self.from_seq is not None and first_t is None:
            first = next(store.frames(cid, after_seq=self.from_seq - 1, limit=1), None)
            first_t = first.frame.t_ns if first is not None else None
        last_t = None
        if self.at is not None:
            last = list(store.frames(cid, after_seq=self.at - 1, upto_seq=self.at))
            last_t = last[0].frame.t_ns if last else None
        return first_t, last_t

    def check_marks(self) -> dict[int, list[Finding]]:
        """The findings of ``acp-proxy check`` of the whole capture, by the frame they are
        about (who ended it, once it has ended, says who is blamed for what is open)."""
        from acp_proxy.check.source import by_seq, check_stored
        from acp_proxy.events.ending import capture_ending

        cap = self.cap
        ending = capture_ending(cap.capture, cap.events()) if self.ended else None
        return by_seq(check_stored(cap.store.frames(cap.id), ending=ending))

    def unanswered(self) -> list[tuple[int, str | None]]:
        """``(seq, method)`` of each request of the capture nothing answered."""
        return self.cap.store.unanswered(self.cap.id)


def since_ns(value: str, started_at: str) -> int:
    """``--since``: an offset into the capture (``1.5s``, ``250ms``, ``2m``, ``3`` seconds)
    or a wall-clock time (``14:03:07``, local, on the capture's start date, or ISO 8601),
    as ns since the capture started."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*(ms|s|m|h)?\s*", value)
    if m:
        unit = {"ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9}[m.group(2) or "s"]
        return _ns(float(m.group(1)) * unit, value)
    base = datetime.fromisoformat(started_at.replace("Z", "+00:00"))
    try:
        if re.fullmatch(r"\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?", value.strip()):
            local = base.astimezone()
            when = datetime.fromisoformat(f"{local.date().isoformat()}T{value.strip()}")
            when = when.replace(tzinfo=local.tzinfo)
        else:
            when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            if when.tzinfo is None:
                when = when.astimezone()
    except ValueError:
        raise UsageError(
            f"--since wants an offset (1.5s, 250ms, 2m) or a time (14:03:07), not {value!r}"
        ) from None
    return max(_ns((when - base).total_seconds() * 1e9, value), 0)


def _ns(ns: float, value: str) -> int:
    """An offset in nanoseconds, as the database compares them (64 bits: 292 years)."""
    if not ns < INT64_MAX:
        raise UsageError(f"--since {value.strip()[:40]!r} is further than a capture can last")
    return int(ns)

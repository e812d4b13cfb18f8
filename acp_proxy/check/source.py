"""Where ``acp-proxy check`` reads frames from: a capture in a recordings
database, or a ``jsonl`` export (read as :func:`acp_proxy.store.refs.read_export` reads it).

What belongs here: turning either into ``(Frame, recorder flags)`` pairs in ``seq`` order,
one capture at a time, so the pure :class:`~acp_proxy.check.core.checker.Checker` never knows where
they came from. The recorder's flags (``split``, ``truncated``, ``resumed``...) come from the
stored ``anomalies``, so a frame the recorder could not keep whole is not blamed on a peer.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from acp_proxy.check.core.checker import Checker
from acp_proxy.check.core.findings import Finding
from acp_proxy.errors import UsageError
from acp_proxy.events.ending import CaptureEnd, capture_ending
from acp_proxy.protocol.frames import Frame
from acp_proxy.store.liveness import capture_state
from acp_proxy.store.reader import Store, StoredFrame
from acp_proxy.store.refs import read_export

__all__ = ["Capture", "by_seq", "check_stored", "checked", "from_jsonl", "from_store"]

Pair = tuple[Frame, tuple[str, ...]]


@dataclass(slots=True)
class Capture:
    """One capture to check: a name for reports, its frames (read lazily), and who ended
    it (asked once the frames are read)."""

    name: str
    frames: Iterator[Pair]
    ending: Callable[[], CaptureEnd | None] = lambda: None
    total: int | None = None  # how many frames, when known (for progress)


def from_store(store: Store, refs: list[str], every: bool) -> Iterator[Capture]:
    rows = store.captures() if every else [store.capture(r) for r in refs or [None]]  # type: ignore[list-item]
    for c in rows:
        yield Capture(
            f"capture {c['id']} ({c['uid'][:12]})",
            ((f.frame, f.anomalies) for f in store.frames(c["id"])),
            functools.partial(_stored_ending, store, c),
            c.get("message_count"),
        )


def _stored_ending(store: Store, c: dict[str, Any]) -> CaptureEnd | None:
    if capture_state(c) == "recording":
        return None  # not ended: what is open may still be answered
    return capture_ending(c, store.events(c["id"]))


def from_jsonl(path: Path) -> Iterator[Capture]:
    """The captures of a ``jsonl`` export, split by its ``capture`` field, read as they are
    checked (a capture's frames are never all in memory). Each capture's frames must be
    consumed before the next capture is asked for."""
    try:
        handle = path.open("rb")
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from e
    with handle:
        seen: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
        groups = _Groups(_lines(handle, path, seen))
        while groups.head is not None:
            uid = groups.head[0]
            frames = groups.take(uid)
            yield Capture(f"{path.name} capture {uid[:12]}", frames,
                          functools.partial(_exported_ending, seen, uid))  # fmt: skip
            for _ in frames:  # whatever the caller left unread
                pass


def _exported_ending(
    seen: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]], uid: str
) -> CaptureEnd | None:
    """Who ended a capture of an export, from its metadata and events (read by then: they
    follow its frames)."""
    row, events = seen.get(uid, ({}, []))
    return capture_ending(row, events) if row else None


class _Groups:
    """Consecutive lines of one capture at a time, reading ahead one line."""

    def __init__(self, lines: Iterator[tuple[str, Pair]]) -> None:
        self._lines = lines
        self.head = next(lines, None)

    def take(self, uid: str) -> Iterator[Pair]:
        while self.head is not None and self.head[0] == uid:
            pair = self.head[1]
            self.head = next(self._lines, None)
            yield pair


_PLAIN_HEAD = b'{"capture":"'
_NO_FLAGS = b'"anomalies":[]'


def _lines(
    handle: IO[bytes],
    path: Path,
    seen: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] | None = None,
) -> Iterator[tuple[str, Pair]]:
    """The frames of an export, with their capture's uid; its metadata and events go into
    ``seen`` (by uid) as they are read."""
    current: list[dict[str, Any]] = []
    for n, line in enumerate(handle, 1):
        if not line.strip():
            continue
        if line.lstrip().startswith(b'{"record"'):  # metadata, stderr or events: not frames
            if seen is not None:
                current = _note(line, seen, current)
            continue
        try:
            frame = read_export([line]).frames[0].frame
            end = line.find(b'"', len(_PLAIN_HEAD))
            if line.startswith(_PLAIN_HEAD) and end > 0 and _NO_FLAGS in line:
                # what the export writes: no need to parse the line a second time
                yield line[len(_PLAIN_HEAD) : end].decode("utf-8", "replace"), (frame, ())
                continue
            obj = orjson.loads(line)
        except UsageError as e:  # what the export reader says, with the file's own line
            why = str(e).split(": ", 1)[-1]
            raise UsageError(f"{path}:{n}: not a jsonl export line ({why})") from e
        except (orjson.JSONDecodeError, KeyError, ValueError, TypeError, IndexError) as e:
            raise UsageError(f"{path}:{n}: not a jsonl export line ({e})") from e
        flags = obj.get("anomalies") if isinstance(obj, dict) else None
        uid = str(obj.get("capture", "")) if isinstance(obj, dict) else ""
        kept = tuple(x for x in flags if isinstance(x, str)) if isinstance(flags, list) else ()
        yield uid, (frame, kept)


def _note(
    line: bytes,
    seen: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]],
    current: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """Keep a capture's metadata line (its events list starts) or an event of it."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return current
    if not isinstance(obj, dict):
        return current
    if obj.get("record") == "capture" and isinstance(obj.get("uid"), str):
        events: list[dict[str, Any]] = []
        seen[obj["uid"]] = (obj, events)
        return events
    if obj.get("record") == "event":
        current.append(obj)
    return current


def check_stored(
    frames: Iterable[StoredFrame],
    keep_per_rule: int | None = None,
    ending: CaptureEnd | None = None,
) -> list[Finding]:
    """The findings of one capture's stored frames (what ``show --check`` and the HTML
    report mark); with ``keep_per_rule``, the first that many of each rule (a capture that
    breaks one rule in every frame must not hold a finding per frame)."""
    return checked(frames, keep_per_rule, ending).findings


def checked(
    frames: Iterable[StoredFrame],
    keep_per_rule: int | None = None,
    ending: CaptureEnd | None = None,
) -> Checker:
    """The checker after the whole capture (``ending``: who ended it): its findings, and
    ``counts`` by rule."""
    return Checker(keep_per_rule=keep_per_rule).run(
        ((f.frame, f.anomalies) for f in frames), lambda: ending
    )


def by_seq(findings: Iterable[Finding]) -> dict[int, list[Finding]]:
    """Findings by the frame they are about (those about the capture as a whole left out)."""
    out: dict[int, list[Finding]] = {}
    for f in findings:
        if f.seq is not None:
            out.setdefault(f.seq, []).append(f)
    return out

"""Journal files left behind, and loss ledgers, next to the database.

What belongs here: the files a recorder writes beside the database when it cannot write
the database itself, or not fast enough — their names, modes and locks, writing and reading
them — and the ledger that keeps loss accounting when not even a spill file can be written.

- A **spill file** (``<db>.spill.<recorder>.<n>.acp``, mode 0600, ``flock``-ed while being
  written) holds records in the wire format (:mod:`acp_proxy.record.wire`), starting with a
  ``CONTEXT`` record naming the captures they belong to. Importing one replays its records
  through the recorder core: positions make that exact and idempotent.
- A **ledger** (``<db>.ledger.<recorder>``, mode 0600) is reserved when a recorder starts,
  so that it can be rewritten in place on a full disk: the ranges of traffic that could not
  be kept anywhere, to be written down as gaps by whoever next opens the database.
"""

from __future__ import annotations

import bisect
import contextlib
import fcntl
import os
from pathlib import Path
from typing import Any

import orjson

__all__ = [
    "Ledger",
    "first_segment",
    "hold_journal",
    "journal_names",
    "journal_of",
    "ledger_files",
    "read_ledger",
    "spill_files",
]

LEDGER_SIZE = 64 * 1024
_LEDGER_RANGES = 400
_LEDGER_META = ("uid", "transport", "agent_command", "cwd", "started_at", "started_ns", "label")


def spill_files(db_path: Path) -> list[Path]:
    """The spill files of ``db_path`` in the order they must be imported: by recorder
    (the one that started spilling first, first), then in stream order within one."""
    p = Path(db_path)
    by_recorder: dict[str, list[tuple[int, Path]]] = {}
    for f in p.parent.glob(p.name + ".spill.*.acp"):
        parts = f.name[len(p.name) :].split(".")  # '', 'spill', recorder, seq, 'acp'
        if len(parts) != 5 or not parts[3].isdigit():
            continue
        by_recorder.setdefault(parts[2], []).append((int(parts[3]), f))

    def first(files: list[tuple[int, Path]]) -> int:
        times = []
        for _, f in files:
            with contextlib.suppress(OSError):
                times.append(f.stat().st_mtime_ns)
        return min(times, default=0)

    out: list[Path] = []
    for files in sorted(by_recorder.values(), key=first):
        out += [f for _, f in sorted(files)]
    return out


def ledger_files(db_path: Path) -> list[Path]:
    p = Path(db_path)
    return sorted(p.parent.glob(p.name + ".ledger.*"))


def legacy_spill_files(db_path: Path) -> list[Path]:
    """Spill files of an earlier release (``.jsonl``), left for the user to see."""
    p = Path(db_path)
    return sorted(p.parent.glob(p.name + ".spill.*.jsonl"))


def _create_private(path: Path, *, append: bool = True) -> int:
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | (os.O_APPEND if append else 0)
    fd = os.open(path, flags, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise
    return fd


def journal_names(db_path: Path) -> list[str]:
    """The journals that have segments next to ``db_path``, oldest first."""
    return list(dict.fromkeys(journal_of(db_path, f) for f in spill_files(db_path)))


def journal_of(db_path: Path, f: Path) -> str:
    return f.name[len(Path(db_path).name) :].split(".")[2]


def first_segment(db_path: Path, journal: str) -> int | None:
    p = Path(db_path)
    seqs = [
        int(f.name.split(".")[-2])
        for f in p.parent.glob(f"{p.name}.spill.{journal}.*.acp")
        if f.name.split(".")[-2].isdigit()
    ]
    return min(seqs) if seqs else None


def hold_journal(db_path: Path, journal: str) -> int | None:
    """Mark journal ``journal`` as in use for as long as the returned descriptor is open
    (its relay, or its recorder): an import leaves a journal alone while anyone holds it."""
    path = Path(f"{db_path}.spill.{journal}.lock")
    try:
        fd = os.open(path, os.O_CREAT | os.O_RDONLY, 0o600)
    except OSError:
        return None
    fcntl.flock(fd, fcntl.LOCK_SH)
    return fd


def take_journal(db_path: Path, journal: str) -> int | None:
    """Hold ``journal`` alone (to import it), or None when someone still holds it."""
    path = Path(f"{db_path}.spill.{journal}.lock")
    try:
        fd = os.open(path, os.O_CREAT | os.O_RDONLY, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def release_journal(db_path: Path, journal: str, fd: int, *, done: bool) -> None:
    if done:
        with contextlib.suppress(OSError):
            Path(f"{db_path}.spill.{journal}.lock").unlink()
    os.close(fd)


def is_locked(path: Path) -> bool:
    """Whether a live process holds ``path`` (a recorder still writing it)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


class Ledger:
    """Loss accounting that survives a full disk: reserved at start, rewritten in place."""

    def __init__(self, db_path: Path, recorder_id: str) -> None:
        self.path = Path(f"{db_path}.ledger.{recorder_id}")
        self._fd = -1
        self._ranges: dict[tuple[str, int], list[list[int]]] = {}
        self._captures: dict[str, dict[str, Any]] = {}

    def reserve(self) -> None:
        try:
            fd = _create_private(self.path, append=False)  # rewritten in place with pwrite
        except OSError:
            return
        try:
            os.posix_fallocate(fd, 0, LEDGER_SIZE)
        except OSError:
            os.close(fd)
            with contextlib.suppress(OSError):
                self.path.unlink()
            return
        self._fd = fd

    @property
    def reserved(self) -> bool:
        return self._fd >= 0

    def note(
        self, meta: dict[str, Any] | None, stream: int, start: int, end: int, frames: int = 0
    ) -> None:
        """``start`` … ``end`` of ``stream`` of the capture ``meta`` (its OPEN payload), which
        held ``frames`` frames, is lost."""
        uid = (meta or {}).get("uid")
        if not isinstance(uid, str):
            return
        if uid not in self._captures:
            self._captures[uid] = {
                k: v for k, v in (meta or {}).items() if k in _LEDGER_META and v is not None
            }
        ranges = self._ranges.setdefault((uid, stream), [])
        _merge(ranges, start, end, frames)
        if len(ranges) > _LEDGER_RANGES:  # keep it small: one range from first to last
            ranges[:] = [[ranges[0][0], ranges[-1][1], sum(r[2] for r in ranges)]]
        self._write()

    def forget(self, uid: str | None, stream: int, start: int, end: int, frames: int) -> None:
        """``start`` … ``end`` is written down elsewhere now (in the journal, as ``LOST``)."""
        if uid is None:
            return
        ranges = self._ranges.get((uid, stream))
        if not ranges:
            return
        out: list[list[int]] = []
        for a, b, f in ranges:
            if b <= start or a >= end:
                out.append([a, b, f])
                continue
            left = [a, start, 0] if a < start else None
            right = [end, b, 0] if b > end else None
            rest = max(0, f - frames)
            frames = max(0, frames - f)
            for piece in (left, right):
                if piece is not None:
                    piece[2], rest = rest, 0
                    out.append(piece)
        ranges[:] = out
        if not ranges:
            del self._ranges[(uid, stream)]
        self._write()

    def _write(self) -> None:
        if self._fd < 0:
            return
        body = orjson.dumps(
            {
                "captures": self._captures,
                "losses": [
                    {"uid": uid, "stream": stream, "ranges": ranges}
                    for (uid, stream), ranges in self._ranges.items()
                ],
            }
        )
        if len(body) > LEDGER_SIZE:
            return
        with contextlib.suppress(OSError):
            os.pwrite(self._fd, body.ljust(LEDGER_SIZE, b" "), 0)

    def remove(self) -> None:
        self.close()
        with contextlib.suppress(OSError):
            self.path.unlink()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if not self._ranges:
            with contextlib.suppress(OSError):
                self.path.unlink()


def _merge(ranges: list[list[int]], start: int, end: int, frames: int) -> None:
    """Add ``[start, end)`` to sorted, disjoint ``ranges``, joining those it touches."""
    i = bisect.bisect_left(ranges, [start])
    if i > 0 and ranges[i - 1][1] >= start:
        i -= 1
    j = i
    while j < len(ranges) and ranges[j][0] <= end:
        start = min(start, ranges[j][0])
        end = max(end, ranges[j][1])
        frames += ranges[j][2]
        j += 1
    ranges[i:j] = [[start, end, frames]]


def read_ledger(path: Path) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """What a ledger holds: the captures (uid → what is known of them) and the losses
    (``uid``, ``stream``, ``ranges``)."""
    try:
        body = path.read_bytes().strip()
        v = orjson.loads(body) if body else {}
    except (OSError, orjson.JSONDecodeError):
        return {}, []
    if not isinstance(v, dict):
        return {}, []
    captures = v.get("captures")
    losses = v.get("losses")
    return (
        {k: m for k, m in captures.items() if isinstance(m, dict)}
        if isinstance(captures, dict)
        else {},
        [x for x in losses if isinstance(x, dict)] if isinstance(losses, list) else [],
    )

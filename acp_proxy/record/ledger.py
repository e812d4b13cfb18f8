"""Loss ledgers: what a relay could not keep anywhere else, kept so the database learns it.

What belongs here: the :class:`Ledger` a relay's journal keeps when records cannot be
written (a full disk), where ledgers live and how they are read back. A ledger holds, per
capture, what is known of it (its ``OPEN`` metadata), the ranges of each stream that were
lost, and how the capture ended when even its ``CLOSE`` record was lost (so a capture whose
agent exited 0 is not shown as killed). Whoever next opens the database writes it down:
``gap`` events, the capture's exit (:func:`acp_proxy.record.imports.import_ledger`).

Where: ``<db>.ledger.<journal>`` (mode 0600), reserved at its full size when the journal
starts so that it can be rewritten in place on a full disk. When even that cannot be
reserved — the disk was full before the relay started — the ledger is kept on another file
system: ``$XDG_RUNTIME_DIR/acp-proxy/`` or ``/dev/shm/acp-proxy-<uid>/`` (memory, mode 0700),
named after the database's real path; the readers and writers of that database look there
too. While the relay runs it tries again, now and then, to reserve it beside the database.
"""

from __future__ import annotations

import bisect
import contextlib
import fcntl
import hashlib
import os
import time
from pathlib import Path
from typing import Any

import orjson

__all__ = ["LEDGER_SIZE", "Ledger", "LedgerContent", "fallback_dir", "ledger_files", "read_ledger"]

LEDGER_SIZE = 64 * 1024
_LEDGER_RANGES = 400
_LEDGER_META = ("uid", "transport", "agent_command", "cwd", "started_at", "started_ns", "label")
_CLOSE_FIELDS = ("exit_code", "exit_signal", "ended_at")
_RETRY_S = 1.0  # how often a relay without a ledger tries to reserve one again


def fallback_dir() -> Path | None:
    """A private directory on a file system of its own (memory), for ledgers that could
    not be reserved beside their database; None when there is none."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    candidates = [Path(runtime) / "acp-proxy"] if runtime else []
    candidates.append(Path("/dev/shm") / f"acp-proxy-{os.getuid()}")
    for d in candidates:
        if not d.parent.is_dir():
            continue
        with contextlib.suppress(OSError):
            d.mkdir(mode=0o700, exist_ok=True)
            if d.is_dir() and not d.is_symlink() and d.stat().st_uid == os.getuid():
                return d
    return None


def _db_key(db_path: Path) -> str:
    real = os.path.realpath(db_path)
    return hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:20]


def ledger_files(db_path: Path) -> list[Path]:
    """The ledgers of ``db_path``: beside it, and on the fallback file system."""
    p = Path(db_path)
    found = sorted(p.parent.glob(p.name + ".ledger.*"))
    elsewhere = fallback_dir()
    if elsewhere is not None:
        found += sorted(elsewhere.glob(f"{_db_key(p)}.ledger.*"))
    return found


def _create_private(path: Path) -> int:
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held while its relay runs
    except OSError:
        os.close(fd)
        raise
    return fd


class Ledger:
    """Loss accounting that survives a full disk: reserved at start, rewritten in place."""

    def __init__(self, db_path: Path, journal: str) -> None:
        self.db_path = Path(db_path)
        self.journal = journal
        self.path = Path(f"{db_path}.ledger.{journal}")
        self._fd = -1
        self._next_try = 0.0
        self._ranges: dict[tuple[str, int], list[list[int]]] = {}
        self._captures: dict[str, dict[str, Any]] = {}
        self._closes: dict[str, dict[str, Any]] = {}

    def reserve(self) -> None:
        """Reserve the ledger beside the database, else on the fallback file system."""
        if self._reserve(self.path):
            return
        elsewhere = fallback_dir()
        if elsewhere is not None:
            self._reserve(elsewhere / f"{_db_key(self.db_path)}.ledger.{self.journal}")

    def _reserve(self, path: Path) -> bool:
        try:
            fd = _create_private(path)
        except OSError:
            return False
        try:
            os.posix_fallocate(fd, 0, LEDGER_SIZE)
        except OSError:
            os.close(fd)
            with contextlib.suppress(OSError):
                path.unlink()
            return False
        self._fd, self.path = fd, path
        return True

    @property
    def reserved(self) -> bool:
        return self._fd >= 0

    def _ready(self) -> bool:
        """Whether there is a ledger to write; without one, try again now and then (space
        may have been freed since the relay started)."""
        if self._fd < 0 and time.monotonic() >= self._next_try:
            self._next_try = time.monotonic() + _RETRY_S
            self.reserve()
        return self._fd >= 0

    def _know(self, meta: dict[str, Any] | None) -> str | None:
        uid = (meta or {}).get("uid")
        if not isinstance(uid, str):
            return None
        if uid not in self._captures:
            self._captures[uid] = {
                k: v for k, v in (meta or {}).items() if k in _LEDGER_META and v is not None
            }
        return uid

    def note(
        self, meta: dict[str, Any] | None, stream: int, start: int, end: int, frames: int = 0
    ) -> None:
        """``start`` … ``end`` of ``stream`` of the capture ``meta`` (its OPEN payload), which
        held ``frames`` frames, is lost."""
        uid = self._know(meta)
        if uid is None:
            return
        ranges = self._ranges.setdefault((uid, stream), [])
        _merge(ranges, start, end, frames)
        if len(ranges) > _LEDGER_RANGES:  # keep it small: one range from first to last
            ranges[:] = [[ranges[0][0], ranges[-1][1], sum(r[2] for r in ranges)]]
        self._write()

    def closed(self, meta: dict[str, Any] | None, body: dict[str, Any]) -> None:
        """The ``CLOSE`` record of capture ``meta`` was lost: keep how it ended."""
        uid = self._know(meta)
        if uid is None:
            return
        self._closes[uid] = {k: body[k] for k in _CLOSE_FIELDS if body.get(k) is not None}
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
        if not self._ready():
            return
        body = orjson.dumps(
            {
                "captures": self._captures,
                "losses": [
                    {"uid": uid, "stream": stream, "ranges": ranges}
                    for (uid, stream), ranges in self._ranges.items()
                ],
                "closes": self._closes,
            }
        )
        if len(body) > LEDGER_SIZE:
            return
        with contextlib.suppress(OSError):
            os.pwrite(self._fd, body.ljust(LEDGER_SIZE, b" "), 0)

    def remove(self) -> None:
        self._ranges.clear()
        self._closes.clear()
        self.close()

    def close(self) -> None:
        """Done: kept when it holds something, else removed."""
        if self._fd >= 0:
            self._write()
            os.close(self._fd)
            self._fd = -1
            if not self._ranges and not self._closes:
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


class LedgerContent:
    """What a ledger holds: the captures (uid → what is known of them), the losses
    (``uid``, ``stream``, ``ranges``) and how captures ended (uid → close fields)."""

    def __init__(
        self,
        captures: dict[str, dict[str, Any]],
        losses: list[dict[str, Any]],
        closes: dict[str, dict[str, Any]],
    ) -> None:
        self.captures, self.losses, self.closes = captures, losses, closes


def read_ledger(path: Path) -> LedgerContent:
    try:
        body = path.read_bytes().strip()
        v = orjson.loads(body) if body else {}
    except (OSError, orjson.JSONDecodeError):
        return LedgerContent({}, [], {})
    if not isinstance(v, dict):
        return LedgerContent({}, [], {})

    def objects(key: str) -> dict[str, dict[str, Any]]:
        x = v.get(key)
        return {k: m for k, m in x.items() if isinstance(m, dict)} if isinstance(x, dict) else {}

    losses = v.get("losses")
    return LedgerContent(
        objects("captures"),
        [x for x in losses if isinstance(x, dict)] if isinstance(losses, list) else [],
        objects("closes"),
    )

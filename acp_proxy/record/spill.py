"""The journal's files beside the database: their names, their locks, and what is left behind.

What belongs here: the names of the files a relay writes beside the database and a
recorder reads, their locks, and what is left there that nothing has brought in yet
(:func:`pending`: what every reader shows, with the command that brings it in). Writing
and following a journal is :mod:`acp_proxy.record.journal` and
:mod:`acp_proxy.record.follow`; the ledger that keeps loss accounting when not even a
journal can be written is :mod:`acp_proxy.record.ledger`.

- A journal's **segments** are ``<db>.journal.<journal>.<n>.acp`` (mode 0600): records in
  the wire format (:mod:`acp_proxy.record.core.wire`), starting with a ``CONTEXT`` record
  naming the captures they belong to; ``<db>.journal.<journal>.lock`` is held (shared) by
  its relay and recorder while they run. Importing a segment replays its records through
  the recorder core: positions make that exact and idempotent.
- A journal nobody holds any more that still has segments (its relay and recorder are gone,
  say the database could not be written) is **left behind**: a *spill*, which the next
  recorder on the database, or ``import-spill``, brings in.

Releases before this one named the same files ``<db>.spill.<journal>.…``. They are still
found and read under that name, and a journal keeps the naming it was started with
(:func:`journal_stem`), so an older relay still running and a newer recorder agree on one
lock. Older still, ``<db>.spill.*.jsonl`` files are only shown to the user
(:func:`legacy_spill_files`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from dataclasses import dataclass, field
from pathlib import Path

from acp_proxy.record.ledger import ledger_files

__all__ = [
    "Leftovers",
    "first_segment",
    "hold_journal",
    "journal_names",
    "journal_of",
    "journal_stem",
    "pending",
    "segment_path",
    "spill_files",
]

_NAMES = ("journal", "spill")  # this release's naming, then the one it replaced
_stems: dict[tuple[Path, str], Path] = {}


def journal_stem(db_path: Path, journal: str) -> Path:
    """``<db>.journal.<journal>``, what the journal's file names start with; or
    ``<db>.spill.<journal>`` for a journal an earlier release started (its lock or a
    segment is there by that name). Asked once per journal: its naming never changes."""
    p = Path(db_path)
    key = (p, journal)
    if key not in _stems:
        old = p.parent / f"{p.name}.spill.{journal}"
        named_old = Path(f"{old}.lock").exists() or any(p.parent.glob(f"{old.name}.*.acp"))
        _stems[key] = old if named_old else p.parent / f"{p.name}.journal.{journal}"
    return _stems[key]


def segment_path(db_path: Path, journal: str, seq: int) -> Path:
    """Segment ``seq`` of ``journal``."""
    return Path(f"{journal_stem(db_path, journal)}.{seq:06d}.acp")


def _lock_path(db_path: Path, journal: str) -> Path:
    return Path(f"{journal_stem(db_path, journal)}.lock")


def spill_files(db_path: Path) -> list[Path]:
    """The journal segments beside ``db_path`` (under either naming), in the order they
    must be imported: by journal (the one that started first, first), then in stream
    order within one."""
    p = Path(db_path)
    by_journal: dict[str, list[tuple[int, Path]]] = {}
    for name in _NAMES:
        for f in p.parent.glob(f"{p.name}.{name}.*.acp"):
            parts = f.name[len(p.name) :].split(".")  # '', naming, journal, seq, 'acp'
            if len(parts) != 5 or not parts[3].isdigit():
                continue
            by_journal.setdefault(parts[2], []).append((int(parts[3]), f))

    def first(files: list[tuple[int, Path]]) -> int:
        times = []
        for _, f in files:
            with contextlib.suppress(OSError):
                times.append(f.stat().st_mtime_ns)
        return min(times, default=0)

    out: list[Path] = []
    for files in sorted(by_journal.values(), key=first):
        out += [f for _, f in sorted(files)]
    return out


def legacy_spill_files(db_path: Path) -> list[Path]:
    """Spill files of an earlier release (``.jsonl``), left for the user to see."""
    p = Path(db_path)
    return sorted(p.parent.glob(p.name + ".spill.*.jsonl"))


def journal_names(db_path: Path) -> list[str]:
    """The journals that have segments next to ``db_path``, oldest first."""
    return list(dict.fromkeys(journal_of(db_path, f) for f in spill_files(db_path)))


def journal_of(db_path: Path, f: Path) -> str:
    return f.name[len(Path(db_path).name) :].split(".")[2]


def first_segment(db_path: Path, journal: str) -> int | None:
    stem = journal_stem(db_path, journal)
    seqs = [
        int(f.name.split(".")[-2])
        for f in stem.parent.glob(f"{stem.name}.*.acp")
        if f.name.split(".")[-2].isdigit()
    ]
    return min(seqs) if seqs else None


def hold_journal(db_path: Path, journal: str) -> int | None:
    """Mark journal ``journal`` as in use for as long as the returned descriptor is open
    (its relay, or its recorder): an import leaves a journal alone while anyone holds it."""
    path = _lock_path(db_path, journal)
    try:
        fd = os.open(path, os.O_CREAT | os.O_RDONLY, 0o600)
    except OSError:
        return None
    fcntl.flock(fd, fcntl.LOCK_SH)
    return fd


def take_journal(db_path: Path, journal: str) -> int | None:
    """Hold ``journal`` alone (to import it), or None when someone still holds it."""
    path = _lock_path(db_path, journal)
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
            _lock_path(db_path, journal).unlink()
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


@dataclass(slots=True)
class Leftovers:
    """What lies beside a database that no running relay or recorder holds and nothing has
    brought in: journals (their files and bytes) and loss ledgers."""

    journals: list[str] = field(default_factory=list)
    journal_bytes: int = 0
    ledgers: list[Path] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.journals or self.ledgers)

    def describe(self, db_path: Path) -> str:
        """One line for a reader, with the command that brings it in."""
        parts = []
        if self.journals:
            n = len(self.journals)
            mb = self.journal_bytes / 1e6
            parts.append(f"{n} journal{'s' if n > 1 else ''} ({mb:.1f} MB) never brought in")
        if self.ledgers:
            n = len(self.ledgers)
            parts.append(f"{n} loss ledger{'s' if n > 1 else ''} not yet written down")
        return (
            f"note: beside {db_path}: {' and '.join(parts)}; bring "
            f"{'them' if len(parts) > 1 or len(self.journals) > 1 else 'it'} in with: "
            f"acp-proxy import-spill --db {db_path}"
        )


def pending(db_path: Path) -> Leftovers:
    """Journals and ledgers of ``db_path`` that nobody holds (their relay and recorder are
    gone) — the next writer of the database brings them in; until then, readers say so."""
    out = Leftovers()
    files = spill_files(db_path)
    for name in dict.fromkeys(journal_of(db_path, f) for f in files):
        taken = take_journal(db_path, name)  # held (shared) by a live relay or recorder?
        if taken is None:
            continue
        os.close(taken)
        out.journals.append(name)
        for f in files:
            if journal_of(db_path, f) == name:
                with contextlib.suppress(OSError):
                    out.journal_bytes += f.stat().st_size
    out.ledgers = [f for f in ledger_files(db_path) if not is_locked(f)]
    return out

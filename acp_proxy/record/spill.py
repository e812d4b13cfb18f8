"""Journal files left behind next to the database: their names, locks, and who still owes them.

What belongs here: the files a relay writes beside the database and a recorder reads —
their names, modes and locks — and what is left there that nothing has brought in yet
(:func:`pending`: what every reader shows, with the command that brings it in). The ledger
that keeps loss accounting when not even a journal can be written is
:mod:`acp_proxy.record.ledger`.

- A **spill file** (``<db>.spill.<recorder>.<n>.acp``, mode 0600, ``flock``-ed while being
  written) holds records in the wire format (:mod:`acp_proxy.record.core.wire`), starting with a
  ``CONTEXT`` record naming the captures they belong to. Importing one replays its records
  through the recorder core: positions make that exact and idempotent.
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
    "pending",
    "spill_files",
]


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

"""Files that hold recordings are private to their user.

What belongs here: the one rule for the files acp-proxy reads recordings from or writes them
to. Recordings and their exports hold whatever crossed the wire — API keys, file contents,
prompts — so:

- a database (and its ``-wal``/``-shm`` files) that belongs to another user, or that
  others may read or write (any group or other permission bit), is refused
  (:func:`refusal`): another user could read what we record, or feed us what we read —
  except an empty file of ours that only the umask made readable, which is made 0600;
- directories we create for a database are 0700, every level of them
  (:func:`make_private_dirs`);
- files we export to are 0600 (:func:`open_private`), also when they existed.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import BinaryIO

from acp_proxy.errors import StoreError

__all__ = ["make_private_dirs", "open_private", "refusal"]


def _problem(path: Path) -> str | None:
    try:
        st = os.stat(path)
    except OSError:
        return None  # absent (or unreadable: opening it will say so)
    if st.st_uid != os.geteuid():
        return (
            f"{path} belongs to another user (uid {st.st_uid}); recordings hold secrets: "
            "use a database of your own (--db PATH)"
        )
    if stat.S_ISREG(st.st_mode) and st.st_mode & 0o077:
        mode = stat.S_IMODE(st.st_mode)
        return (
            f"{path} can be read or written by other users (mode {mode:04o}); "
            f"recordings hold secrets: chmod 600 {path}"
        )
    return None


def _tighten_empty(path: Path) -> None:
    """An empty file of ours that others may read but not write holds nothing yet: make it
    0600 rather than refuse it. (``sqlite3 PATH`` or a script's ``connect`` creates one
    with the umask's mode before the first recording; nobody else can have written it.)"""
    try:
        st = os.stat(path)
        if (
            stat.S_ISREG(st.st_mode)
            and st.st_size == 0
            and st.st_uid == os.geteuid()
            and st.st_mode & 0o077
            and not st.st_mode & 0o022
        ):
            os.chmod(path, 0o600)
    except OSError:
        pass  # the check that follows says what is wrong


def refusal(db: Path) -> str | None:
    """Why the database ``db`` must not be used, or ``None`` (it is ours and private, or
    it does not exist yet)."""
    _tighten_empty(db)
    for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        problem = _problem(path)
        if problem is not None:
            return problem
    return None


def make_private_dirs(directory: Path) -> None:
    """Create ``directory`` and its missing parents, each one 0700 (``mkdir -p`` would
    give the parents the umask's mode)."""
    missing = []
    d = Path(directory)
    while not d.exists() and d != d.parent:
        missing.append(d)
        d = d.parent
    for d in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile by another process
            os.mkdir(d, 0o700)
            os.chmod(d, 0o700)  # whatever the umask


def open_private(path: Path) -> BinaryIO:
    """``path`` opened for writing from its start, mode 0600: created so, or made so before
    anything is written when it existed. A terminal, pipe or device is left as it is."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOCTTY, 0o600)
    except OSError as e:
        raise StoreError(f"cannot write {path}: {e.strerror}") from e
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.fchmod(fd, 0o600)
            os.ftruncate(fd, 0)
    except OSError as e:
        os.close(fd)
        raise StoreError(f"cannot make {path} private (mode 0600): {e.strerror}") from e
    return os.fdopen(fd, "wb")

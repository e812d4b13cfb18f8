"""What a stranger starts from: a fresh clone of the repository and a fresh virtualenv."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["clone", "tracked", "venv"]


def tracked(root: Path) -> list[str]:
    """The files a fresh clone of ``root`` holds (what is committed or staged)."""
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True, timeout=60
    ).stdout.decode()
    return sorted(f for f in out.split("\0") if f)


def clone(root: Path, dest: Path) -> Path:
    """A copy of the files a fresh clone of ``root`` holds, nothing built or cached."""
    for rel in tracked(root):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, target)
    return dest


def venv(dest: Path, *, pip: bool = True) -> Path:
    """A new virtualenv of this Python, with nothing installed (``pip`` itself, or not)."""
    args = [sys.executable, "-m", "venv", str(dest)]
    subprocess.run(args if pip else [*args, "--without-pip"], check=True, timeout=120)
    return dest

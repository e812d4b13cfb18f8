"""Paths a peer names, inside the workspace or not (pure).

What belongs here: :func:`workspace_path`, whether a path stays in a session's working
directory as ``git apply`` reads it (the ``patch`` export writes no other), and
:func:`display_path`, how the views show a path (relative to the working directory only when
it is inside it).
"""

from __future__ import annotations

import posixpath

__all__ = ["display_path", "workspace_path"]


def workspace_path(path: str, cwd: str | None) -> str | None:
    """``path`` relative to the workspace ``cwd``, or ``None`` when it is not safely inside.

    An absolute path must start with ``cwd``; a relative one is taken as relative to it.
    The relative path must stay in the workspace as written, since that is how ``git apply``
    reads it: no ``..``, ``.`` or empty components, no ``.git`` (a repository's hooks and
    config), no control characters (a line break would start another patch line).
    """
    if posixpath.isabs(path):
        root = (cwd or "").rstrip("/") + "/"
        if root == "/" or not posixpath.isabs(root) or not path.startswith(root):
            return None
        path = path[len(root) :]
    parts = path.split("/")
    if any(p in ("", ".", "..") or p.lower() == ".git" for p in parts):
        return None
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
        return None
    return path


def display_path(path: str, cwd: str | None) -> str:
    """``path`` relative to ``cwd`` when it is inside it (:func:`workspace_path`), else the
    path as sent: a path that leaves the workspace is never shown as one that does not."""
    rel = workspace_path(path, cwd) if posixpath.isabs(path) else None
    return rel if rel is not None else path

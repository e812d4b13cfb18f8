"""What the file fold records (pure): each change reported, each version of a path.

What belongs here: :class:`FileChange` (one row of ``acp-proxy diffs``, its patch made when
first asked for), :class:`FileVersion` (a point in a path's timeline: what happened and
what is known afterwards) and :class:`FileHistory` (a path's starting state, versions and
state now, and its content at any point). How the traffic fills them is
:mod:`acp_proxy.reconstruct.files`'s.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Any

from acp_proxy.reconstruct.patch import unified

__all__ = ["FileChange", "FileHistory", "FileVersion"]


@dataclass(slots=True)
class FileChange:
    """One change to one path: a row of ``acp-proxy diffs``."""

    path: str | None
    operation: str
    old_path: str | None
    session_id: str | None
    tool_call_id: str | None
    seq: int
    t_ns: int
    source: str  # "diff" (tool call content), "fs_write"
    file_type: str | None = None
    mime_type: str | None = None
    section: str | None = None  # v2: the git_patch section for this change, as sent
    rel: str | None = None  # when both sides are known: the path to write in a made patch
    old_text: str | None = None
    new_text: str | None = None
    stale: bool = False
    ok: bool | None = None  # fs_write: whether the client reported success
    applies: int | None = None  # fs_write: the seq of the tool call diff it applies
    meta: Any = None
    raw: Any = None
    _made: str | None = None

    @property
    def patch(self) -> str | None:
        """Unified diff text: the v2 section as sent, else one made from the known old and
        new texts (made when first asked for, as most views never need it); ``None`` when
        neither exists or nothing changed."""
        if self.section is not None:
            return self.section
        if self.rel is None:
            return None
        if self._made is None:
            self._made = unified(self.old_text, self.new_text, self.rel)
        return self._made or None


@dataclass(slots=True)
class FileVersion:
    """A point in a path's timeline: what happened and what is known afterwards."""

    seq: int
    t_ns: int
    operation: str  # read, write, add, delete, modify, move_from, move_to, copy_to, other
    source: str
    session_id: str | None
    tool_call_id: str | None
    exists: bool | None
    content: str | None
    partial: bool = False
    stale: bool = False
    diverged: bool = False  # a read showed a content other than the last known one


@dataclass(slots=True)
class FileHistory:
    path: str
    start_exists: bool | None = None
    start_content: str | None = None
    exists: bool | None = None
    content: str | None = None
    versions: list[FileVersion] = field(default_factory=list)
    disk_exists: bool | None = None  # as last shown by fs/read_text_file or written
    disk_content: str | None = None
    _started: bool = False
    _base: tuple[bool | None, str | None] | None = None  # after the versions forgotten

    def start(self, exists: bool | None, content: str | None) -> None:
        if not self._started:
            self._started = True
            self.start_exists, self.start_content = exists, content

    def content_at(self, seq: int) -> tuple[bool | None, str | None]:
        """``(exists, content)`` after every version up to ``seq`` (``None`` = unknown)."""
        state = (self.start_exists, self.start_content) if self._base is None else self._base
        for v in self.versions:
            if v.seq > seq:
                break
            if not v.partial:
                state = (v.exists, v.content)
        return state

    def forget_before(self, seq: int | None) -> None:
        """Drop the versions before ``seq`` (all of them when ``None``), keeping the state
        they left: :meth:`content_at` from there on is unchanged."""
        drop = len(self.versions) if seq is None else bisect_left(self.versions, seq, key=_seq)
        if drop:
            self._base = self.content_at(self.versions[drop - 1].seq)
            del self.versions[:drop]


def _seq(v: FileVersion) -> int:
    return v.seq

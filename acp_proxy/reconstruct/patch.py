"""Unified diffs: making them, splitting git patches, applying hunks (pure).

What belongs here: text-only helpers the file fold and the ``patch`` export use —
:func:`unified` makes a ``git apply``-compatible diff between two known contents (with
``/dev/null`` for a missing side and the "No newline at end of file" marker, which
:mod:`difflib` does not write), :func:`split_git_patch` cuts a v2 ``git_patch`` text into
its ``diff --git`` sections (docs/protocol.md §6.3), and :func:`apply_hunks` applies one
section to a known content, refusing when the context does not match.
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass

__all__ = [
    "HEADER_PATHS",
    "Section",
    "apply_hunks",
    "lines_of",
    "section_for",
    "split_git_patch",
    "unified",
    "well_formed",
]

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_NO_EOL = "\\ No newline at end of file"
# The extended header lines of a git diff that name a path, and the others it may have.
HEADER_PATHS = ("--- ", "+++ ", "rename from ", "rename to ", "copy from ", "copy to ")
_HEADER_OTHER = ("index ", "similarity index ", "dissimilarity index ")
_MODE_LINES = ("new file mode ", "deleted file mode ", "old mode ", "new mode ")
_MODES = ("100644", "100755")  # regular files: no symlink, no submodule


def lines_of(text: str) -> list[str]:
    """``text`` cut into lines as git cuts them: after each ``\\n`` only (a ``\\r``, form
    feed or U+2028 is content; :meth:`str.splitlines` would cut there and make hunk counts
    that ``git apply`` reads differently)."""
    lines = text.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


@functools.lru_cache(maxsize=1)
def unified(old: str | None, new: str | None, a: str, b: str | None = None) -> str:
    """A git-style unified diff from ``old`` to ``new`` (``None`` = the file is absent).

    ``a`` and ``b`` are the paths written in the headers (``b`` defaults to ``a``), without
    the ``a/`` and ``b/`` prefixes. Returns ``""`` when nothing changed. The last one made
    is remembered: an edit shown as a diff is usually written next, the same change.
    """
    b = a if b is None else b
    if old == new and a == b:
        return ""
    head = [f"diff --git a/{a} b/{b}\n"]
    if old is None:
        head.append("new file mode 100644\n")
    elif new is None:
        head.append("deleted file mode 100644\n")
    elif a != b:
        head += [f"rename from {a}\n", f"rename to {b}\n"]
    old_lines = lines_of(old or "")
    new_lines = lines_of(new or "")
    if old_lines == new_lines:  # an empty file added or removed, or a pure rename
        return "".join(head)
    out = "".join(head)
    out += f"--- {'/dev/null' if old is None else 'a/' + a}\n"
    out += f"+++ {'/dev/null' if new is None else 'b/' + b}\n"
    body = difflib.unified_diff(old_lines, new_lines, n=3)
    for i, line in enumerate(body):
        if i < 2:  # difflib's own ---/+++ lines
            continue
        out += line
        if not line.endswith("\n"):
            out += "\n" + _NO_EOL + "\n"
    return out


@dataclass(frozen=True, slots=True)
class Section:
    """One ``diff --git`` section: its old and new paths as written, and its text."""

    old_path: str | None
    new_path: str | None
    text: str


def _strip(path: str) -> str | None:
    path = path.strip()
    if path == "/dev/null":
        return None
    if path.startswith(("a/", "b/")) and not path.startswith(("a//", "b//")):
        return path[1:] if path[2:].startswith("/") else path[2:]
    return path


def split_git_patch(text: str) -> list[Section]:
    """Cut a ``git_patch`` into ``diff --git`` sections (text before the first is dropped).

    Paths come from the ``---``/``+++`` lines when present (they are unambiguous), else from
    the ``diff --git`` line; ``a/`` and ``b/`` prefixes are removed.
    """
    sections: list[Section] = []
    lines = lines_of(text)
    starts = [i for i, line in enumerate(lines) if line.startswith("diff --git ")]
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        chunk = lines[start:end]
        old = new = None
        seen_old = seen_new = False
        for line in chunk[1:]:
            if line.startswith("@@"):
                break
            if line.startswith("--- "):
                old, seen_old = _strip(line[4:].rstrip("\n")), True
            elif line.startswith("+++ "):
                new, seen_new = _strip(line[4:].rstrip("\n")), True
            elif line.startswith(("rename from ", "copy from ")):
                old, seen_old = line.split(" ", 2)[2].rstrip("\n"), True
            elif line.startswith(("rename to ", "copy to ")):
                new, seen_new = line.split(" ", 2)[2].rstrip("\n"), True
        if not (seen_old and seen_new):
            parts = chunk[0][len("diff --git ") :].rstrip("\n").split(" ")
            if len(parts) == 2:
                if not seen_old:
                    old = _strip(parts[0])
                if not seen_new:
                    new = _strip(parts[1])
        sections.append(Section(old, new, "".join(chunk)))
    return sections


def apply_hunks(old: str, section: str) -> str | None:
    """Apply the hunks of one section to ``old``; ``None`` when the context does not match.

    A section without hunks (a rename, a mode change) leaves the content as it is.
    """
    src = lines_of(old)
    out: list[str] = []
    pos = 0
    lines = lines_of(section)
    i = 0
    while i < len(lines):
        m = _HUNK.match(lines[i])
        if not m:
            i += 1
            continue
        start = int(m.group(1))
        count = int(m.group(2)) if m.group(2) is not None else 1
        begin = start - 1 if count else start
        if begin < pos or begin > len(src):
            return None
        out += src[pos:begin]
        pos = begin
        i += 1
        while i < len(lines) and not lines[i].startswith(("@@", "diff --git ")):
            line = lines[i]
            tag, body = (" ", "\n") if line == "\n" else (line[:1], line[1:])
            eol_next = i + 1 < len(lines) and lines[i + 1].startswith("\\")
            if eol_next:
                body = body.rstrip("\n")
            if tag in (" ", "-"):
                if pos >= len(src) or src[pos] != body:
                    return None
                pos += 1
                if tag == " ":
                    out.append(body)
            elif tag == "+":
                out.append(body)
            elif tag != "\\":
                break
            i += 1
    out += src[pos:]
    return "".join(out)


def well_formed(section: str) -> bool:
    """Whether one ``diff --git`` section is nothing but its header and hunks whose line
    counts match: after the last counted line nothing may follow that ``git apply`` could
    read as the header of another file (``--- ``/``+++ `` of a traditional diff, say).
    Only regular file modes are accepted."""
    lines = [line.removesuffix("\n") for line in lines_of(section)]
    if not lines or not lines[0].startswith("diff --git "):
        return False
    i = 1
    while i < len(lines) and not lines[i].startswith("@@"):
        line = lines[i]
        if line.startswith(_MODE_LINES):
            if line.rsplit(" ", 1)[-1] not in _MODES:
                return False
        elif not line.startswith((*HEADER_PATHS, *_HEADER_OTHER)):
            return False
        i += 1
    while i < len(lines):
        m = _HUNK.match(lines[i])
        if not m:
            return False
        old = int(m.group(2)) if m.group(2) is not None else 1
        new = int(m.group(4)) if m.group(4) is not None else 1
        i += 1
        while old > 0 or new > 0 or (i < len(lines) and lines[i].startswith("\\")):
            if i >= len(lines):
                return False
            tag = lines[i][:1]
            if tag in (" ", ""):
                old, new = old - 1, new - 1
            elif tag == "-":
                old -= 1
            elif tag == "+":
                new -= 1
            elif tag != "\\":
                return False
            if old < 0 or new < 0:
                return False
            i += 1
    return True


def section_for(
    sections: list[Section], op: str, path: str | None, old_path: str | None
) -> Section | None:
    """The patch section for one change: same new path (old path for a delete)."""
    for s in sections:
        if op == "delete":
            hit = path is not None and s.old_path == path
        elif path is not None:
            hit = s.new_path == path
        else:
            hit = old_path is not None and s.old_path == old_path
        if hit:
            return s
    return None

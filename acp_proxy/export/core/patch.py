"""One patch of a session's text changes, for ``git apply`` (pure, no I/O).

What belongs here: :func:`session_patch`, which turns the file fold into a single patch
against the *starting* tree. For each path whose starting and final states are both known
(from reads, v1 diffs, writes, or v2 patches applied to known contents) the patch is made
from those two contents, so any number of intermediate edits collapse into one section.
Where contents are not known but the agent sent v2 ``git_patch`` text for every change of
the path (docs/protocol.md §6.3), those sections are used as sent, with their absolute paths made
relative to the session's working directory. Anything else is skipped, with a reason.

The patch is applied by someone trusting it, so no path in it may leave the workspace
(:func:`~acp_proxy.reconstruct.paths.workspace_path`): a path outside the working directory,
one climbing out with ``..`` or into ``.git``, is skipped; so is a v2 section that is not
plain (:func:`~acp_proxy.reconstruct.patch.well_formed`), since ``git apply`` would read
lines after its hunks as the header of another file.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from acp_proxy.reconstruct.filestate import FileChange, FileHistory
from acp_proxy.reconstruct.fold import Reconstruction
from acp_proxy.reconstruct.patch import HEADER_PATHS, unified, well_formed
from acp_proxy.reconstruct.paths import workspace_path

__all__ = ["PatchResult", "session_patch"]


@dataclass(slots=True)
class PatchResult:
    text: str = ""
    paths: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def _cwd(r: Reconstruction, h: FileHistory) -> str | None:
    for v in h.versions:
        s = r.sessions.get(v.session_id or "")
        if s is not None and s.cwd:
            return s.cwd
    return None


def _rewrite(section: str, cwd: str | None) -> str | None:
    """A section with its header paths made ``a/<rel>``/``b/<rel>``, relative to ``cwd``;
    ``None`` when it is not a plain section (:func:`well_formed`) or a path in it leaves
    the workspace."""
    if not well_formed(section):
        return None

    def rel(p: str, prefix: str) -> str | None:
        p = p.strip()
        if p == "/dev/null":
            return p
        if p.startswith(("a/", "b/")) and not p[2:].startswith("/"):
            p = p[2:]
        inside = workspace_path(p, cwd)
        return None if inside is None else prefix + inside

    out = []
    in_head = True
    for line in section.split("\n"):  # git's lines (a \r or a form feed is content)
        if in_head:
            new: str | None = line
            if line.startswith("@@"):
                in_head = False
            elif line.startswith("diff --git "):
                parts = line[len("diff --git ") :].split(" ")
                if len(parts) != 2:
                    return None
                a, b = rel(parts[0], "a/"), rel(parts[1], "b/")
                new = f"diff --git {a} {b}" if a and b else None
            elif line.startswith("--- "):
                p = rel(line[4:], "a/")
                new = p and f"--- {p}"
            elif line.startswith("+++ "):
                p = rel(line[4:], "b/")
                new = p and f"+++ {p}"
            elif line.startswith(HEADER_PATHS):
                head, _, path = line.rpartition(" ")
                p = rel(path, "")
                new = p and f"{head} {p}"
            if new is None:
                return None
            line = new
        out.append(line)
    return "\n".join(out)


_OUTSIDE = "outside the session's working directory"


def session_patch(r: Reconstruction) -> PatchResult:
    """The session's text changes as one patch on the starting tree."""
    result = PatchResult()
    used: set[int] = set()
    for path, h in r.files.paths.items():
        cwd = _cwd(r, h)
        rel = workspace_path(path, cwd) if posixpath.isabs(path) else None
        if rel is None:
            result.skipped.append((path, _OUTSIDE))
            continue
        changes = [c for c in r.files.changes if path in (c.path, c.old_path)]
        if not changes:
            continue  # only read
        start_known = h.start_exists is False or (
            h.start_exists is True and h.start_content is not None
        )
        end_known = h.exists is False or (h.exists is True and h.content is not None)
        if start_known and end_known:
            old = h.start_content if h.start_exists else None
            new = h.content if h.exists else None
            text = unified(old, new, rel)
            if text:
                result.text += text
                result.paths.append(path)
            continue
        if all(_v2_section(c) for c in changes):
            fresh = {id(c.patch): c.patch or "" for c in changes if id(c.patch) not in used}
            texts = [_rewrite(section, cwd) for section in fresh.values()]
            if any(t is None for t in texts):
                result.skipped.append((path, f"its patch text is not plain or goes {_OUTSIDE}"))
                continue
            used.update(fresh)
            result.text += "".join(t or "" for t in texts)
            result.paths.append(path)
            continue
        result.skipped.append((path, "contents not known and no patch text"))
    return result


def _v2_section(c: FileChange) -> bool:
    return c.patch is not None and c.raw is not None and "operation" in (c.raw or {})

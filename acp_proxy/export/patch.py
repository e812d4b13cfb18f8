"""One patch of a session's text changes, for ``git apply`` (layer 1: pure, no I/O).

What belongs here: :func:`session_patch`, which turns the file fold into a single patch
against the *starting* tree. For each path whose starting and final states are both known
(from reads, v1 diffs, writes, or v2 patches applied to known contents) the patch is made
from those two contents, so any number of intermediate edits collapse into one section.
Where contents are not known but the agent sent v2 ``git_patch`` text for every change of
the path (PROTOCOL.md §6.3), those sections are used as sent, with their absolute paths made
relative to the session's working directory. Anything else is skipped, with a reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from acp_proxy.reconstruct.files import FileChange, FileHistory, display_path
from acp_proxy.reconstruct.fold import Reconstruction
from acp_proxy.reconstruct.patch import unified

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


def _inside(path: str, cwd: str | None) -> bool:
    return bool(cwd) and path.startswith(str(cwd).rstrip("/") + "/")


def _rewrite(section: str, cwd: str | None) -> str:
    """Make a section's header paths ``a/<rel>``/``b/<rel>`` relative to ``cwd``."""

    def rel(p: str, prefix: str) -> str:
        p = p.strip()
        if p == "/dev/null":
            return p
        if p.startswith(("a/", "b/")) and not p[2:].startswith("/"):
            p = p[2:]
        return prefix + display_path(p, cwd)

    out = []
    in_head = True
    for line in section.splitlines(keepends=True):
        if in_head:
            body = line.rstrip("\n")
            if line.startswith("@@"):
                in_head = False
            elif line.startswith("diff --git "):
                parts = body[len("diff --git ") :].split(" ")
                if len(parts) == 2:
                    line = f"diff --git {rel(parts[0], 'a/')} {rel(parts[1], 'b/')}\n"
            elif line.startswith("--- "):
                line = f"--- {rel(body[4:], 'a/')}\n"
            elif line.startswith("+++ "):
                line = f"+++ {rel(body[4:], 'b/')}\n"
            elif line.startswith(("rename from ", "rename to ", "copy from ", "copy to ")):
                head, _, p = body.rpartition(" ")
                line = f"{head} {rel(p, '')}\n"
        out.append(line)
    return "".join(out)


def session_patch(r: Reconstruction) -> PatchResult:
    """The session's text changes as one patch on the starting tree."""
    result = PatchResult()
    used: set[int] = set()
    for path, h in r.files.paths.items():
        cwd = _cwd(r, h)
        if not _inside(path, cwd):
            result.skipped.append((path, "outside the session's working directory"))
            continue
        changes = [c for c in r.files.changes if path in (c.path, c.old_path)]
        if not changes:
            continue  # only read
        start_known = h.start_exists is False or (
            h.start_exists is True and h.start_content is not None
        )
        end_known = h.exists is False or (h.exists is True and h.content is not None)
        rel = display_path(path, cwd)
        if start_known and end_known:
            old = h.start_content if h.start_exists else None
            new = h.content if h.exists else None
            text = unified(old, new, rel)
            if text:
                result.text += text
                result.paths.append(path)
            continue
        if all(_v2_section(c) for c in changes):
            for c in changes:
                if id(c.patch) not in used:
                    used.add(id(c.patch))
                    result.text += _rewrite(c.patch or "", cwd)
            result.paths.append(path)
            continue
        result.skipped.append((path, "contents not known and no patch text"))
    return result


def _v2_section(c: FileChange) -> bool:
    return c.patch is not None and c.raw is not None and "operation" in (c.raw or {})

"""Files and diffs: per-path timelines, known contents, stale edits (pure).

What belongs here: what the recorded traffic says about files —

* v1 ``diff`` content ``{path, oldText?, newText}`` (docs/protocol.md §6.3): ``oldText`` absent or
  ``null`` means a new file;
* v2 ``diff`` content ``{changes[], patch?}`` (§6.3): ``changes`` is
  authoritative (``add``, ``delete``, ``modify``, ``move``, ``copy``, or an unknown
  operation kept as sent); ``patch`` (``git_patch``) may be absent, and is split into
  sections matched to the changes by path;
* ``fs/read_text_file`` results (what the agent saw) and ``fs/write_text_file`` params (what
  it wrote), v1 §4.1.

Each path gets a timeline of versions (unless no view needs it: then only the versions a
refused write may go back to are kept). A content is "known" only when the traffic shows it
whole (a full read, a v1 diff, a write, or a v2 patch applied to a known content). A diff
whose old text does not match the last known content is flagged ``stale``.
"""

from __future__ import annotations

from typing import Any

from acp_proxy.reconstruct.filestate import FileChange, FileHistory, FileVersion
from acp_proxy.reconstruct.patch import Section, apply_hunks, section_for, split_git_patch
from acp_proxy.reconstruct.paths import display_path

__all__ = ["Files"]

_PAIR_OPS = frozenset({"move", "copy"})


class Files:
    """The file fold: changes in arrival order and a history per path."""

    def __init__(self, *, timelines: bool = True) -> None:
        """``timelines``: keep every version of each path (the ``files`` view); without,
        only those a refused write may go back to."""
        self.changes: list[FileChange] = []
        self.paths: dict[str, FileHistory] = {}
        self._disk_before: dict[int, tuple[bool | None, str | None]] = {}
        self._timelines = timelines
        self._unanswered: dict[str, list[int]] = {}  # path: seqs of writes not answered
        # path: the last change a tool call proposed for it (seq, its new text), which a
        # write of exactly that text applies (one change, shown once)
        self._proposed: dict[str, tuple[int, str]] = {}

    def history(self, path: str) -> FileHistory:
        h = self.paths.get(path)
        if h is None:
            h = self.paths[path] = FileHistory(path)
        return h

    def _version(self, h: FileHistory, v: FileVersion) -> None:
        h.versions.append(v)
        if not v.partial:
            h.exists, h.content = v.exists, v.content
        if not self._timelines:
            self._forget(h)

    def _forget(self, h: FileHistory) -> None:
        waiting = self._unanswered.get(h.path)
        h.forget_before(waiting[0] if waiting else None)

    # -- v1 -----------------------------------------------------------------------------

    def v1_diff(
        self,
        item: dict[str, Any],
        sid: str | None,
        tcid: str | None,
        seq: int,
        t_ns: int,
        cwd: str | None,
    ) -> None:
        """A v1 ``{type:"diff", path, oldText?, newText}`` item (§6.3)."""
        path = item.get("path")
        if not isinstance(path, str):
            return
        old = item.get("oldText")
        old = old if isinstance(old, str) else None
        new = item.get("newText")
        new = new if isinstance(new, str) else ""
        h = self.history(path)
        h.start(old is not None, old)
        stale = _stale(h, old is not None, old)
        rel = display_path(path, cwd)
        self.changes.append(
            FileChange(
                path,
                "add" if old is None else "modify",
                None,
                sid,
                tcid,
                seq,
                t_ns,
                "diff",
                file_type="text",
                rel=rel,
                old_text=old,
                new_text=new,
                stale=stale,
                meta=item.get("_meta"),
                raw=item,
            )
        )
        op = "add" if old is None else "modify"
        self._version(h, FileVersion(seq, t_ns, op, "diff", sid, tcid, True, new, stale=stale))
        self._proposed[path] = (seq, new)

    def read(
        self, params: dict[str, Any], result: Any, sid: str | None, seq: int, t_ns: int
    ) -> None:
        """An answered ``fs/read_text_file``: the agent saw ``content`` (§4.1)."""
        path = params.get("path")
        if not isinstance(path, str) or not isinstance(result, dict):
            return
        content = result.get("content")
        if not isinstance(content, str):
            return
        partial = params.get("line") is not None or params.get("limit") is not None
        h = self.history(path)
        h.start(True, None if partial else content)
        diverged = not partial and h.content is not None and h.content != content
        if not partial:
            h.disk_exists, h.disk_content = True, content
        self._version(
            h,
            FileVersion(
                seq,
                t_ns,
                "read",
                "fs_read",
                sid,
                None,
                True,
                content,
                partial=partial,
                diverged=diverged,
            ),
        )

    def write(
        self, params: dict[str, Any], sid: str | None, seq: int, t_ns: int, cwd: str | None
    ) -> FileChange | None:
        """An ``fs/write_text_file`` request: what the agent wrote (§4.1)."""
        path = params.get("path")
        content = params.get("content")
        if not isinstance(path, str) or not isinstance(content, str):
            return None
        h = self.history(path)
        h.start(None, None)
        # Compare with what is on disk: what the last read or write left there, else the
        # starting state (diffs shown before a write are proposals until it happens).
        exists: bool | None = h.exists
        current = h.content
        if h.disk_exists is not None:
            exists, current = h.disk_exists, h.disk_content
        elif h.start_exists is not None:
            exists, current = h.start_exists, h.start_content
        before = current if exists else None
        known = exists is False or (exists is True and current is not None)
        disk_before = (h.disk_exists, h.disk_content)
        h.disk_exists, h.disk_content = True, content
        change = FileChange(
            path,
            "add" if exists is False else "modify",
            None,
            sid,
            None,
            seq,
            t_ns,
            "fs_write",
            file_type="text",
            rel=display_path(path, cwd) if known else None,
            old_text=before,
            new_text=content,
            meta=params.get("_meta"),
            raw=None,
        )
        proposed = self._proposed.pop(path, None)
        if proposed is not None and proposed[1] == content:
            change.applies = proposed[0]  # the write of a tool call's own diff
        self.changes.append(change)
        self._disk_before[id(change)] = disk_before
        self._unanswered.setdefault(path, []).append(seq)
        self._version(h, FileVersion(seq, t_ns, "write", "fs_write", sid, None, True, content))
        return change

    def write_failed(self, change: FileChange, seq: int) -> None:
        """The client refused a write: the path is back to its state before it."""
        change.ok = False
        if change.path is None:
            return
        h = self.history(change.path)
        h.versions = [v for v in h.versions if not (v.seq == change.seq and v.source == "fs_write")]
        h.exists, h.content = h.content_at(seq)
        h.disk_exists, h.disk_content = self._disk_before.pop(id(change), (None, None))
        self._answered(h, change)

    def write_done(self, change: FileChange) -> None:
        change.ok = True
        self._disk_before.pop(id(change), None)
        if change.path is not None:
            self._answered(self.history(change.path), change)

    def _answered(self, h: FileHistory, change: FileChange) -> None:
        waiting = self._unanswered.pop(h.path, [])
        if change.seq in waiting:
            waiting.remove(change.seq)
        if waiting:
            self._unanswered[h.path] = waiting
        if not self._timelines:
            self._forget(h)

    # -- v2 -----------------------------------------------------------------------------

    def v2_diff(
        self, item: dict[str, Any], sid: str | None, tcid: str | None, seq: int, t_ns: int
    ) -> None:
        """A v2 ``{type:"diff", changes[], patch?}`` item (§6.3); ``changes`` is authoritative."""
        patch = item.get("patch")
        sections: list[Section] = []
        if isinstance(patch, dict) and isinstance(patch.get("text"), str):
            sections = split_git_patch(patch["text"])
        changes = item.get("changes")
        for change in changes if isinstance(changes, list) else []:
            if isinstance(change, dict):
                self._v2_change(change, sections, sid, tcid, seq, t_ns)
                last = self.changes[-1] if self.changes else None
                if last is not None and last.seq == seq and last.path and last.new_text is not None:
                    self._proposed[last.path] = (seq, last.new_text)

    def _v2_change(
        self,
        c: dict[str, Any],
        sections: list[Section],
        sid: str | None,
        tcid: str | None,
        seq: int,
        t_ns: int,
    ) -> None:
        op = c.get("operation")
        op = op if isinstance(op, str) else "unknown"
        path = c.get("path") if isinstance(c.get("path"), str) else None
        old_path = c.get("oldPath") if isinstance(c.get("oldPath"), str) else None
        section = section_for(sections, op, path, old_path)
        fc = FileChange(
            path,
            op,
            old_path,
            sid,
            tcid,
            seq,
            t_ns,
            "diff",
            file_type=c.get("fileType") if isinstance(c.get("fileType"), str) else None,
            mime_type=c.get("mimeType") if isinstance(c.get("mimeType"), str) else None,
            section=section.text if section else None,
            meta=c.get("_meta"),
            raw=c,
        )
        self.changes.append(fc)
        text = fc.file_type in (None, "text")
        if op in _PAIR_OPS and path is not None and old_path is not None:
            src = self.history(old_path)
            src.start(True, None)
            fc.stale = src.exists is False
            fc.old_text = src.content if src.exists else None
            carried = src.content if src.exists and text else None
            if op == "move":
                self._version(
                    src, FileVersion(seq, t_ns, "move_from", "diff", sid, tcid, False, None)
                )
            dst = self.history(path)
            dst.start(False, None)
            new = apply_hunks(carried, section.text) if carried is not None and section else carried
            fc.new_text = new
            self._version(dst, FileVersion(seq, t_ns, f"{op}_to", "diff", sid, tcid, True, new))
            return
        if path is None:
            return
        h = self.history(path)
        if op == "add":
            h.start(False, None)
            fc.stale = h.exists is True
            new = apply_hunks("", section.text) if section and text else None
            fc.new_text = new
            self._version(
                h, FileVersion(seq, t_ns, op, "diff", sid, tcid, True, new, stale=fc.stale)
            )
        elif op == "delete":
            h.start(True, None)
            fc.stale = h.exists is False
            fc.old_text = h.content if h.exists else None
            self._version(
                h, FileVersion(seq, t_ns, op, "diff", sid, tcid, False, None, stale=fc.stale)
            )
        elif op == "modify":
            h.start(True, None)
            fc.old_text = h.content if h.exists else None
            new = None
            if section and text and h.exists and h.content is not None:
                new = apply_hunks(h.content, section.text)
                fc.stale = new is None
            fc.stale = fc.stale or h.exists is False
            fc.new_text = new
            self._version(
                h, FileVersion(seq, t_ns, op, "diff", sid, tcid, True, new, stale=fc.stale)
            )
        else:  # unknown operation: kept, and what we knew about the path is no longer sure
            h.start(None, None)
            self._version(h, FileVersion(seq, t_ns, "other", "diff", sid, tcid, None, None))


def _stale(h: FileHistory, expect_exists: bool, expect: str | None) -> bool:
    """Does a diff's old side contradict the last known state of the path?"""
    if h.exists is None:
        return False
    if h.exists != expect_exists:
        return True
    return expect is not None and h.content is not None and h.content != expect

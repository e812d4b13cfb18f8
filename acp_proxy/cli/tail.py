"""``acp-proxy tail``: the latest frames of the database, and with ``-f`` new ones live.

What belongs here: the ``tail`` command — the history it prints first, following new
frames and stderr as they are written, and announcing each capture as it starts and ends.
The lines themselves are made in :mod:`acp_proxy.text.timeline`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click

from acp_proxy.cli.common import CONTEXT, Int, db_path, dump_json, echo
from acp_proxy.cli.options import (
    db_option,
    filter_options,
    grep_options,
    json_option,
    output_options,
)
from acp_proxy.errors import UsageError
from acp_proxy.store.endings import ending_events
from acp_proxy.store.reader import Store, StoredFrame
from acp_proxy.store.refs import is_file_ref
from acp_proxy.text.style import Styled

__all__ = ["tail"]


def _last_matching(
    store: Store, keep: Any, n: int, capture_id: int | None, upto_rowid: int
) -> list[StoredFrame]:
    """The last ``n`` frames ``keep`` accepts (oldest first), scanning back page by page."""
    found: list[StoredFrame] = []
    before: int | None = upto_rowid + 1
    while n > 0 and len(found) < n:
        page = store.frames_before_rowid(before, 5000, capture_id)
        if not page:
            break
        found += [f for f in page if keep(f)]
        before = page[-1].rowid
    found = found[:n]
    found.sort(key=lambda f: (f.rowid, f.seq))
    return found


@click.command(context_settings=CONTEXT)
@db_option
@json_option
@click.option("-f", "--follow", is_flag=True, help="Keep printing new frames as they arrive.")
@click.option(
    "-n",
    "--lines",
    type=Int(0),
    default=20,
    show_default=True,
    help="Frames of history first.",
)
@click.option("--capture", "capture", default=None, help="Only this capture (default: all).")
@grep_options
@filter_options
@click.option("--interval", type=float, default=0.2, show_default=True, hidden=True)
@output_options
def tail(
    db: Path | None,
    as_json: bool,
    follow: bool,
    lines: int,
    capture: str | None,
    grep: str | None,
    ignore_case: bool,
    interval: float,
    no_pager: bool,
    **filters: Any,
) -> None:
    """Print the latest frames, and with -f follow new ones live.

    While following, the agent's stderr is shown as it is written (unless frames are
    filtered), and each capture is announced when it starts and when it ends: how the
    agent ended (exit code, signal) and the requests it left unanswered.

    \b
    Examples (in a second terminal while an editor runs the agent):
        acp-proxy tail -f
        acp-proxy tail -f --method 'session/*' --kind request --json
        acp-proxy tail -f -i --grep error
        acp-proxy tail -f --filter 'error:any or anomaly:any'
    """
    from acp_proxy.text.timeline import FrameFilter, Grep

    keep = FrameFilter.of(filters)
    match = Grep(grep, ignore_case) if grep is not None else None
    filtering = keep.active
    if is_file_ref(capture):
        raise UsageError(f"tail reads the database; for the export {capture} use show")
    path = db_path(db)
    waited = follow and not path.exists()
    if waited:
        echo(f"acp-proxy: waiting for {path} to be created (Ctrl-C to stop)", err=True)
    while follow and not path.exists():
        time.sleep(interval)
    store = Store(path)
    out = _Printer(store, keep, match, as_json, filtering)
    cid = store.capture(capture)["id"] if capture else None
    # a database created while we waited is all new: follow it from its start
    last = 0 if waited else store.max_rowid()
    last_err = 0 if waited else store.max_stderr_rowid()
    history = [] if waited else _last_matching(store, out.wanted, lines, cid, last)
    for f in history:
        out.frame(f)
    sys.stdout.flush()
    if not history and lines and (filtering or match is not None) and not waited:
        echo(f"acp-proxy: no frame matches{' yet' if follow else ''}", err=True)
    if not follow:
        return
    watch = _Announcer(store, cid, as_json, fresh=waited)
    _follow(store, out, watch, cid, last, last_err, interval)


class _Printer:
    """What ``tail`` prints of a frame or a stderr write: those the filters keep, as a
    timeline line tagged with the capture, or one JSON object a line."""

    def __init__(self, store: Store, keep: Any, match: Any, as_json: bool, filtering: bool) -> None:
        self.store = store
        self.keep = keep
        self.match = match
        self.as_json = as_json
        self.filtering = filtering  # frames are filtered: stderr is not shown
        self.uids: dict[int, str] = {}
        from acp_proxy.export.jsonl import frame_object, stderr_object
        from acp_proxy.text.timeline import frame_parts, stderr_parts

        self.frame_object, self.stderr_object = frame_object, stderr_object
        self.frame_parts, self.stderr_parts = frame_parts, stderr_parts

    def uid(self, capture_id: int) -> str:
        if capture_id not in self.uids:
            self.uids[capture_id] = str(self.store.capture(capture_id)["uid"])
        return self.uids[capture_id]

    def wanted(self, f: StoredFrame) -> bool:
        return bool(self.keep(f)) and (self.match is None or self.match(f))

    def frame(self, f: StoredFrame) -> None:
        if not self.keep(f) or (self.match is not None and not self.match(f)):
            return
        if self.as_json:
            dump_json(self.frame_object(f, self.uid(f.capture_id)), indent=False)
        else:
            echo(Styled.of(f"c{f.capture_id} ") + self.frame_parts(f))

    def stderr(self, capture_id: int, t_ns: int, data: bytes) -> None:
        match = self.match
        if self.filtering:
            return
        if self.as_json:
            if match is None or match.text(data.decode("utf-8", "replace")):
                obj = {
                    "capture": self.uid(capture_id),
                    "stderr": True,
                    **self.stderr_object(t_ns, data),
                }
                dump_json(obj, indent=False)
            return
        for line in self.stderr_parts(t_ns, data):
            if match is None or match.text(str(line)):
                echo(Styled.of(f"c{capture_id} ") + line)


def _follow(
    store: Store,
    out: _Printer,
    watch: _Announcer,
    cid: int | None,
    last: int,
    last_err: int,
    interval: float,
) -> None:
    """``tail -f``: print what is written after rowids ``last`` (frames) and ``last_err``
    (stderr), announcing captures as they start and end, until interrupted."""
    while True:
        ended = watch.poll()
        new = store.frames_after_rowid(last, cid)
        for f in new:
            out.frame(f)
            last = max(last, f.rowid)
        err = store.stderr_after_rowid(last_err, cid)
        for rowid, capture_id, t_ns, data in err:
            out.stderr(capture_id, t_ns, data)
            last_err = rowid
        if len(new) >= 5000:  # more frames to print first: announce the end later
            watch.open.update((c["id"], c) for c in ended)
            ended = []
        watch.announce(ended)
        if new or err or ended:
            sys.stdout.flush()
        else:
            time.sleep(interval)


class _Announcer:
    """``tail -f``'s announcements: a capture started (transport, agent, pid) and ended
    (exit code or signal, a crash, the requests it left unanswered)."""

    def __init__(
        self, store: Store, capture_id: int | None, as_json: bool, fresh: bool = False
    ) -> None:
        self.store = store
        self.only = capture_id
        self.as_json = as_json
        existing = [] if fresh else store.captures(None)
        self.above = max((c["id"] for c in existing), default=0)
        self.open: dict[int, dict[str, Any]] = {
            c["id"]: c for c in existing if self._running(c) and self._mine(c["id"])
        }

    def _mine(self, capture_id: int) -> bool:
        return self.only is None or capture_id == self.only

    @staticmethod
    def _running(c: dict[str, Any]) -> bool:
        from acp_proxy.store.liveness import capture_state

        return capture_state(c) in ("recording", "finishing")

    def poll(self) -> list[dict[str, Any]]:
        """Announce the captures that started; return those that ended, to announce once
        their last frames are printed (they were all written before the capture was
        marked ended)."""
        ended = []
        for c in self.store.captures_from(list(self.open), self.above):
            cid = c["id"]
            if cid > self.above:
                self.above = cid
                if not self._mine(cid):
                    continue
                self._say(c, "started")
                self.open[cid] = c
            if cid in self.open and not self._running(c):
                del self.open[cid]
                ended.append(c)
        return ended

    def announce(self, ended: list[dict[str, Any]]) -> None:
        for c in ended:
            self._say(c, "ended")

    def _say(self, c: dict[str, Any], what: str) -> None:
        from acp_proxy.text.captures import capture_row, cut_short

        ends = ending_events(self.store, [c["id"]]).get(c["id"], [])
        row = capture_row(c, ends)
        crashed = bool(c.get("exit_signal")) or c.get("exit_code") not in (None, 0)
        unanswered = self.store.unanswered(c["id"]) if what == "ended" else []
        if self.as_json:
            dump_json(
                {
                    "capture": c["uid"],
                    "capture_id": c["id"],
                    what: True,
                    **row,
                    "crashed": crashed if what == "ended" else None,
                    "unanswered": [{"seq": s, "method": m} for s, m in unanswered],
                },
                indent=False,
            )
            return
        if what == "started":
            pid = f", pid {c['pid']}" if c.get("pid") else ""
            echo(
                Styled.of(
                    (f"c{c['id']} ── capture {c['id']} started", "event"),
                    f" ({row['transport']}{pid}) {row['agent_command']}  uid {c['uid'][:8]}",
                )
            )
            return
        text = f"c{c['id']} ── capture {c['id']} ended: {row['status']}, {row['messages']} frames"
        if crashed:
            text += " (crashed)"
        if unanswered:
            where = ", ".join(f"#{s} {m}" for s, m in unanswered[:5])
            text += f"; {cut_short(c, ends)} with {len(unanswered)} request(s) unanswered: {where}"
        echo(Styled.of((text, "error" if crashed or unanswered else "event")))

"""``captures``, ``show`` and ``tail``: captures and their frames as text or JSON."""

from __future__ import annotations

import heapq
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import orjson

from acp_proxy.cli.common import (
    CONTEXT,
    CaptureCommand,
    db_option,
    db_path,
    dump_json,
    echo,
    filter_options,
    handle_errors,
    json_option,
    open_store,
    output_options,
    paged,
)
from acp_proxy.errors import UsageError
from acp_proxy.store.reader import Store, StoredFrame
from acp_proxy.store.refs import ExportStore, is_file_ref, resolve
from acp_proxy.text.style import Styled

__all__ = ["captures", "show", "tail"]


@click.command(context_settings=CONTEXT)
@db_option
@json_option
@click.option(
    "-n", "--limit", type=click.IntRange(min=0), default=None, help="Only the latest N captures."
)
@output_options
@handle_errors
def captures(db: Path | None, as_json: bool, limit: int | None, no_pager: bool) -> None:
    """List captures: id, start, duration, agent, peers, protocol, messages, status, label.

    \b
    Example:
        acp-proxy captures -n 5
    """
    from acp_proxy.text.captures import capture_row

    store = open_store(db)
    rows = [capture_row(c) for c in store.captures(limit)]
    if as_json:
        dump_json(rows)
        return
    if not rows:
        echo(f"no captures in {store.path}", err=True)
        return
    width = max(4, *(len(str(r["id"])) for r in rows))
    labels = max(5, *(len(_label(r["label"])) for r in rows))
    with paged(not no_pager):
        head = (
            f"{'id':>{width}}  {'started (UTC)':<19}  {'dur':>7}  {'proto':>5}  {'msgs':>6}  "
            f"{'status':<9}  {'label':<{labels}}  {'client ⇄ agent':<34}  command"
        )
        echo(Styled.of((head, "bold")))
        for r in rows:
            dur = "running" if r["duration_s"] is None else f"{r['duration_s']:.2f}s"
            peers = f"{r['client'] or '?'} ⇄ {r['agent'] or '?'}"
            proto = f"v{r['protocol_version']}" if r["protocol_version"] is not None else "-"
            bad = r["status"] != "running" and not r["status"].startswith(("exit 0", "closed"))
            echo(
                Styled.of(
                    f"{r['id']:>{width}}  {r['started_at'][:19].replace('T', ' '):<19}  "
                    f"{dur:>7}  {proto:>5}  {r['messages']:>6}  ",
                    (f"{r['status']:<9}", "error" if bad else None),
                    f"  {_label(r['label']):<{labels}}  {peers:<34}  {r['agent_command']}",
                )
            )


def _label(label: str | None) -> str:
    if not label:
        return "-"
    return label if len(label) <= 24 else label[:23] + "…"


def _since(value: str, started_at: str) -> int:
    """``--since``: an offset into the capture (``1.5s``, ``250ms``, ``2m``, ``3`` seconds)
    or a wall-clock time (``14:03:07``, local, on the capture's start date, or ISO 8601),
    as ns since the capture started."""
    import re
    from datetime import datetime

    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*(ms|s|m|h)?\s*", value)
    if m:
        unit = {"ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9}[m.group(2) or "s"]
        return int(float(m.group(1)) * unit)
    base = datetime.fromisoformat(started_at.replace("Z", "+00:00"))
    try:
        if re.fullmatch(r"\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?", value.strip()):
            local = base.astimezone()
            when = datetime.fromisoformat(f"{local.date().isoformat()}T{value.strip()}")
            when = when.replace(tzinfo=local.tzinfo)
        else:
            when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            if when.tzinfo is None:
                when = when.astimezone()
    except ValueError:
        raise UsageError(
            f"--since wants an offset (1.5s, 250ms, 2m) or a time (14:03:07), not {value!r}"
        ) from None
    return max(int((when - base).total_seconds() * 1e9), 0)


def _timeline(
    store: Store,
    c: dict[str, Any],
    frames: Iterator[StoredFrame],
    *,
    events: bool,
    stderr: bool,
    first_t: int | None,
    last_t: int | None,
) -> Iterator[tuple[int, int, Any]]:
    """Frames, events and stderr merged in time order: ``(t_ns, rank, item)``."""
    streams: list[Iterator[tuple[int, int, Any]]] = [((f.frame.t_ns, 1, f) for f in frames)]

    def bounded(items: Iterator[tuple[int, int, Any]]) -> Iterator[tuple[int, int, Any]]:
        for item in items:
            if first_t is not None and item[0] < first_t:
                continue
            if last_t is not None and item[0] > last_t:
                return
            yield item

    if events:
        streams.append(bounded((ev["t_ns"], 0, ev) for ev in store.events(c["id"])))
    if stderr:
        streams.append(bounded((t, 2, data) for t, data in store.stderr(c["id"])))
    return heapq.merge(*streams, key=lambda x: (x[0], x[1]))


@click.command(cls=CaptureCommand, context_settings=CONTEXT)
@db_option
@json_option
@click.argument("capture", required=False)
@click.option("--wall", is_flag=True, help="Show wall-clock times instead of offsets.")
@click.option(
    "--stderr/--no-stderr",
    "with_stderr",
    default=None,
    help="The agent's stderr in the timeline, when it was written (default: shown unless "
    "frames are filtered).",
)
@click.option(
    "--view",
    type=click.Choice(
        ["frames", "turns", "tools", "permissions", "terminals", "diffs", "files", "sessions"]
    ),
    default="frames",
    show_default=True,
    help="What to show: the frames, or what the user saw (turns, tool calls, permissions…).",
)
@click.option("--at", "at", type=int, default=None, metavar="SEQ", help="Stop after frame SEQ.")
@click.option(
    "--from", "from_seq", type=int, default=None, metavar="SEQ", help="Start at frame SEQ."
)
@click.option(
    "--since",
    metavar="TIME",
    help="Start at TIME: an offset into the capture (1.5s, 250ms, 2m) or a wall-clock time "
    "(14:03:07, local).",
)
@click.option(
    "--grep",
    "grep",
    metavar="PATTERN",
    help="Only frames (and stderr lines) whose text matches this regular expression; "
    "case-insensitive unless it has a capital letter.",
)
@click.option(
    "--check",
    "with_check",
    is_flag=True,
    help="Mark the frames that break ACP (the rules of acp-proxy check).",
)
@filter_options
@output_options
@handle_errors
def show(
    db: Path | None,
    as_json: bool,
    capture: str | None,
    wall: bool,
    with_stderr: bool | None,
    view: str,
    at: int | None,
    from_seq: int | None,
    since: str | None,
    grep: str | None,
    no_pager: bool,
    with_check: bool,
    **filters: Any,
) -> None:
    """Print a capture's timeline (default: the latest capture), or a view of it.

    CAPTURE is a capture id (default: the latest), -1 for the latest, a uid prefix, or
    the path of a jsonl export (as in recordings/). The timeline has every frame, the
    connection and process events, and the agent's stderr, each at the time it happened.
    Requests nothing answered before the capture ended are flagged !unanswered.

    \b
    Example:
        acp-proxy show 3 --wall
        acp-proxy show 3 --view turns
        acp-proxy show --view permissions --at 120
        acp-proxy show --method 'fs/*' --direction a2c
        acp-proxy show --grep 'Traceback|ENOENT' --since 2m
    """
    from acp_proxy.store.liveness import capture_state
    from acp_proxy.text.captures import capture_header, cut_short
    from acp_proxy.text.timeline import (
        FrameFilter,
        Grep,
        event_parts,
        frame_parts,
        seq_width,
        stderr_parts,
    )

    if view != "frames":
        from acp_proxy.cli.views import print_view

        session = filters.pop("session", None)
        given = [f"--{k}" for k, v in filters.items() if v not in (None, False)]
        given += ["--wall"] if wall else []
        given += ["--stderr"] if with_stderr else []
        given += ["--grep"] if grep is not None else []
        given += ["--from"] if from_seq is not None else []
        given += ["--since"] if since is not None else []
        if given:
            raise UsageError(f"{given[0]} does not apply to --view {view} (--session and --at do)")
        with paged(not no_pager and not as_json):
            print_view(db, capture, view, at, as_json, session=session)
        return
    if at is not None and at < 0:
        raise UsageError("--at takes a frame number (seq) of zero or more")
    if from_seq is not None and from_seq < 0:
        raise UsageError("--from takes a frame number (seq) of zero or more")
    store: Any
    if is_file_ref(capture):  # an export reads as the database does: the same timeline
        source = resolve(capture, db_path(db))
        store, c = ExportStore(source), source.capture
    else:
        store = open_store(db)
        c = store.capture(capture)
    ended = capture_state(c) != "recording"
    first_t = None if since is None else _since(since, c["started_at"])
    keep = FrameFilter(**filters)
    match = Grep(grep) if grep is not None else None
    marks: dict[int, list[Any]] = {}
    if with_check:  # the findings of acp-proxy check, by the frame they are about
        from acp_proxy.check.source import by_seq, check_stored

        marks = by_seq(check_stored(store.frames(c["id"])))
    after = -1 if from_seq is None else from_seq - 1
    frames = (
        f
        for f in store.frames(c["id"], after_seq=after, upto_seq=at, from_t_ns=first_t, ended=ended)
        if keep(f) and (match is None or match(f))
    )
    filtering = any(v not in (None, False) for v in filters.values())
    if from_seq is not None and first_t is None:
        first = next(store.frames(c["id"], after_seq=after, limit=1), None)
        first_t = first.frame.t_ns if first is not None else None
    last_t = None
    if at is not None:
        last = list(store.frames(c["id"], after_seq=at - 1, upto_seq=at))
        last_t = last[0].frame.t_ns if last else None
    show_stderr = with_stderr if with_stderr is not None else not filtering

    def merged(frames: Iterator[StoredFrame], events: bool, stderr: bool) -> Iterator[Any]:
        return _timeline(
            store, c, frames, events=events, stderr=stderr, first_t=first_t, last_t=last_t
        )

    if as_json:
        _show_json(
            c,
            merged(frames, False, False),
            merged(iter(()), False, show_stderr),
            merged(iter(()), True, False),  # events stay: they are the lifecycle
            match,
            marks if with_check else None,
        )
        return
    items = merged(frames, True, show_stderr)  # events stay with any filter
    started = c["started_at"] if wall else None
    width = seq_width(max(c.get("message_count") or 0, 1) - 1)
    with paged(not no_pager):
        for line in capture_header(c):
            echo(line)
        for _t, rank, item in items:
            if rank == 1:
                echo(frame_parts(item, started, width))
                for x in marks.get(item.seq, []):
                    echo(f"{'':>12} ⚠ {x.severity} {x.rule} [{x.side}] {x.message}")
            elif rank == 0:
                if match is None or match.text(f"{item['kind']} {item.get('detail') or ''}"):
                    echo(event_parts(item, width, started))
            else:
                for said in stderr_parts(_t, item, width, started):
                    if match is None or match.text(str(said)):
                        echo(said)
        if ended and at is None:
            open_requests = store.unanswered(c["id"])
            if open_requests:
                shown = ", ".join(f"#{seq} {m}" for seq, m in open_requests[:8])
                more = f" and {len(open_requests) - 8} more" if len(open_requests) > 8 else ""
                echo(
                    Styled.of(
                        (
                            f"  {len(open_requests)} request(s) never answered "
                            f"({cut_short(c)} first): {shown}{more}",
                            "anomaly",
                        )
                    )
                )


def _show_json(
    c: dict[str, Any],
    frames: Iterator[tuple[int, int, Any]],
    stderr: Iterator[tuple[int, int, Any]],
    events: Iterator[tuple[int, int, Any]],
    match: Any,
    marks: dict[int, list[Any]] | None = None,
) -> None:
    """``show --json``: one JSON document, written as it is read from cursors (nothing of
    the capture is held in memory): the capture, its frames, stderr and events."""
    from acp_proxy.export.jsonl import frame_object, stderr_object
    from acp_proxy.text.safe import json_visible_bytes

    out = sys.stdout.buffer

    def dumps(v: Any) -> bytes:
        return json_visible_bytes(orjson.dumps(v, default=str))

    def array(name: str, items: Iterator[bytes], last: bool = False) -> None:
        out.write(f' "{name}": ['.encode())
        sep = b"\n  "
        for item in items:
            out.write(sep + item)
            sep = b",\n  "
        out.write(b"\n ]\n}\n" if last else b"\n ],\n")

    out.write(b'{"capture": ' + dumps(c) + b",\n")

    def frame(f: StoredFrame) -> dict[str, Any]:
        obj = frame_object(f, c["uid"])
        if marks is not None:  # show --check: what acp-proxy check found in this frame
            obj["findings"] = [
                {"rule": x.rule, "severity": x.severity, "side": x.side, "message": x.message}
                for x in marks.get(f.seq, [])
            ]
        return obj

    array("frames", (dumps(frame(f)) for _t, _r, f in frames))
    array(
        "stderr",
        (
            dumps(stderr_object(t, data))
            for t, _r, data in stderr
            if match is None or match.text(data.decode("utf-8", "replace"))
        ),
    )
    array(
        "events",
        (
            dumps(ev)
            for _t, _r, ev in events
            if match is None or match.text(f"{ev['kind']} {ev.get('detail') or ''}")
        ),
        last=True,
    )
    out.flush()


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
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help="Frames of history first.",
)
@click.option("--capture", "capture", default=None, help="Only this capture (default: all).")
@click.option(
    "--grep",
    "grep",
    metavar="PATTERN",
    help="Only frames (and stderr lines) whose text matches this regular expression.",
)
@filter_options
@click.option("--interval", type=float, default=0.2, show_default=True, hidden=True)
@output_options
@handle_errors
def tail(
    db: Path | None,
    as_json: bool,
    follow: bool,
    lines: int,
    capture: str | None,
    grep: str | None,
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
        acp-proxy tail -f --grep -i error
    """
    from acp_proxy.export.jsonl import frame_object, stderr_object
    from acp_proxy.text.timeline import FrameFilter, Grep, frame_parts, stderr_parts

    keep = FrameFilter(**filters)
    match = Grep(grep) if grep is not None else None
    uids: dict[int, str] = {}
    filtering = any(v not in (None, False) for v in filters.values())

    def uid(capture_id: int) -> str:
        if capture_id not in uids:
            uids[capture_id] = str(store.capture(capture_id)["uid"])
        return uids[capture_id]

    def emit(f: StoredFrame) -> None:
        if not keep(f) or (match is not None and not match(f)):
            return
        if as_json:
            dump_json(frame_object(f, uid(f.capture_id)), indent=False)
        else:
            echo(Styled.of(f"c{f.capture_id} ") + frame_parts(f))

    def emit_stderr(capture_id: int, t_ns: int, data: bytes) -> None:
        if filtering:
            return
        if as_json:
            if match is None or match.text(data.decode("utf-8", "replace")):
                obj = {"capture": uid(capture_id), "stderr": True, **stderr_object(t_ns, data)}
                dump_json(obj, indent=False)
            return
        for line in stderr_parts(t_ns, data):
            if match is None or match.text(str(line)):
                echo(Styled.of(f"c{capture_id} ") + line)

    if is_file_ref(capture):
        raise UsageError(f"tail reads the database; for the export {capture} use show")
    path = db_path(db)
    waited = follow and not path.exists()
    if waited:
        echo(f"acp-proxy: waiting for {path} to be created (Ctrl-C to stop)", err=True)
    try:
        while follow and not path.exists():
            time.sleep(interval)
    except KeyboardInterrupt:
        sys.exit(130)
    store = Store(path)
    cid = store.capture(capture)["id"] if capture else None
    # a database created while we waited is all new: follow it from its start
    last = 0 if waited else store.max_rowid()
    last_err = 0 if waited else store.max_stderr_rowid()

    def wanted(f: StoredFrame) -> bool:
        return bool(keep(f)) and (match is None or match(f))

    for f in [] if waited else _last_matching(store, wanted, lines, cid, last):
        emit(f)
    sys.stdout.flush()
    if not follow:
        return
    watch = _Announcer(store, cid, as_json, fresh=waited)
    try:
        while True:
            ended = watch.poll()
            new = store.frames_after_rowid(last, cid)
            for f in new:
                emit(f)
                last = max(last, f.rowid)
            err = store.stderr_after_rowid(last_err, cid)
            for rowid, capture_id, t_ns, data in err:
                emit_stderr(capture_id, t_ns, data)
                last_err = rowid
            if len(new) >= 5000:  # more frames to print first: announce the end later
                watch.open.update((c["id"], c) for c in ended)
                ended = []
            watch.announce(ended)
            if new or err or ended:
                sys.stdout.flush()
            else:
                time.sleep(interval)
    except KeyboardInterrupt:
        sys.stdout.flush()
        sys.exit(130)


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

        row = capture_row(c)
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
            text += f"; {cut_short(c)} with {len(unanswered)} request(s) unanswered: {where}"
        echo(Styled.of((text, "error" if crashed or unanswered else "event")))

"""``captures``, ``show`` and ``tail``: captures and their frames as text or JSON."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click

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
)
from acp_proxy.errors import UsageError
from acp_proxy.store.reader import Store, StoredFrame
from acp_proxy.store.refs import is_file_ref, resolve

__all__ = ["captures", "show", "tail"]


@click.command(context_settings=CONTEXT)
@db_option
@json_option
@click.option(
    "-n", "--limit", type=click.IntRange(min=0), default=None, help="Only the latest N captures."
)
@handle_errors
def captures(db: Path | None, as_json: bool, limit: int | None) -> None:
    """List captures: id, start, duration, agent, peers, protocol, messages, status.

    \b
    Example:
        acp-proxy captures -n 5
    """
    from acp_proxy.text.timeline import capture_row

    store = open_store(db)
    rows = [capture_row(c) for c in store.captures(limit)]
    if as_json:
        dump_json(rows)
        return
    if not rows:
        echo(f"no captures in {store.path}", err=True)
        return
    echo(
        f"{'id':>4}  {'started (UTC)':<19}  {'dur':>7}  {'proto':>5}  {'msgs':>6}  "
        f"{'status':<9}  {'client ⇄ agent':<34}  command"
    )
    for r in rows:
        dur = "running" if r["duration_s"] is None else f"{r['duration_s']:.2f}s"
        peers = f"{r['client'] or '?'} ⇄ {r['agent'] or '?'}"
        proto = f"v{r['protocol_version']}" if r["protocol_version"] is not None else "-"
        echo(
            f"{r['id']:>4}  {r['started_at'][:19].replace('T', ' '):<19}  {dur:>7}  "
            f"{proto:>5}  {r['messages']:>6}  {r['status']:<9}  {peers:<34}  "
            f"{r['agent_command']}"
        )


@click.command(cls=CaptureCommand, context_settings=CONTEXT)
@db_option
@json_option
@click.argument("capture", required=False)
@click.option("--wall", is_flag=True, help="Show wall-clock times instead of offsets.")
@click.option(
    "--stderr/--no-stderr", "with_stderr", default=False, help="Also print the agent's stderr."
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
@filter_options
@handle_errors
def show(
    db: Path | None,
    as_json: bool,
    capture: str | None,
    wall: bool,
    with_stderr: bool,
    view: str,
    at: int | None,
    **filters: Any,
) -> None:
    """Print a capture's timeline (default: the latest capture), or a view of it.

    CAPTURE is a capture id (default: the latest), -1 for the latest, a uid prefix, or
    the path of a jsonl export (as in recordings/).

    \b
    Example:
        acp-proxy show 3 --wall
        acp-proxy show 3 --view turns
        acp-proxy show --view permissions --at 120
        acp-proxy show --method 'fs/*' --direction a2c
    """
    from acp_proxy.export.jsonl import frame_object
    from acp_proxy.text.timeline import FrameFilter, capture_header, event_line, frame_line

    if view != "frames":
        from acp_proxy.cli.views import print_view

        session = filters.pop("session", None)
        given = [f"--{k}" for k, v in filters.items() if v not in (None, False)]
        given += ["--wall"] if wall else []
        given += ["--stderr"] if with_stderr else []
        if given:
            raise UsageError(f"{given[0]} does not apply to --view {view} (--session and --at do)")
        print_view(db, capture, view, at, as_json, session=session)
        return
    if at is not None and at < 0:
        raise UsageError("--at takes a frame number (seq) of zero or more")
    source = resolve(capture, db_path(db))
    c = source.capture
    keep = FrameFilter(**filters)
    if as_json:
        frames = (f for f in source.frames(upto_seq=at) if keep(f))
        dump_json({"capture": c, "frames": [frame_object(f, c["uid"]) for f in frames]})
        return
    for line in capture_header(c):
        echo(line)
    started = c["started_at"] if wall else None
    events = source.events()
    last_t: int | None = None
    for f in source.frames(upto_seq=at):
        last_t = f.frame.t_ns
        while events and events[0]["t_ns"] <= last_t:
            echo(event_line(events.pop(0), started))
        if keep(f):
            echo(frame_line(f, started))
    for ev in events:
        if at is not None and (last_t is None or ev["t_ns"] > last_t):
            break  # after frame SEQ: not yet happened then
        echo(event_line(ev, started))
    if with_stderr:
        for t, data in source.stderr():
            if at is not None and (last_t is None or t > last_t):
                break
            echo(data.decode("utf-8", "replace"), nl=False)


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
@filter_options
@click.option("--interval", type=float, default=0.2, show_default=True, hidden=True)
@handle_errors
def tail(
    db: Path | None,
    as_json: bool,
    follow: bool,
    lines: int,
    capture: str | None,
    interval: float,
    **filters: Any,
) -> None:
    """Print the latest frames, and with -f follow new ones live.

    \b
    Examples (in a second terminal while an editor runs the agent):
        acp-proxy tail -f
        acp-proxy tail -f --method 'session/*' --kind request --json
    """
    from acp_proxy.export.jsonl import frame_object
    from acp_proxy.text.timeline import FrameFilter, frame_line

    keep = FrameFilter(**filters)
    uids: dict[int, str] = {}

    def emit(f: StoredFrame) -> None:
        if not keep(f):
            return
        if as_json:
            if f.capture_id not in uids:
                uids[f.capture_id] = store.capture(f.capture_id)["uid"]
            dump_json(frame_object(f, uids[f.capture_id]), indent=False)
        else:
            echo(f"c{f.capture_id} {frame_line(f)}")

    if is_file_ref(capture):
        raise UsageError(f"tail reads the database; for the export {capture} use show")
    path = db_path(db)
    if follow and not path.exists():
        echo(f"acp-proxy: waiting for {path} to be created (Ctrl-C to stop)", err=True)
    try:
        while follow and not path.exists():
            time.sleep(interval)
    except KeyboardInterrupt:
        return
    store = Store(path)
    cid = store.capture(capture)["id"] if capture else None
    last = store.max_rowid()
    for f in _last_matching(store, keep, lines, cid, last):
        emit(f)
    sys.stdout.flush()
    if not follow:
        return
    try:
        while True:
            new = store.frames_after_rowid(last, cid)
            for f in new:
                emit(f)
                last = max(last, f.rowid)
            if new:
                sys.stdout.flush()
            else:
                time.sleep(interval)
    except KeyboardInterrupt:
        return

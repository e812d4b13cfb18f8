"""``captures``, ``show`` and ``tail``: captures and their frames as text or JSON."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click

from acp_proxy.cli.common import (
    CONTEXT,
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

__all__ = ["captures", "show", "tail"]


@click.command(context_settings=CONTEXT)
@db_option
@json_option
@click.option("-n", "--limit", type=int, default=None, help="Only the latest N captures.")
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


@click.command(context_settings=CONTEXT)
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
@click.option(
    "--check",
    "with_check",
    is_flag=True,
    help="Mark the frames that break ACP (the rules of acp-proxy check).",
)
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
    with_check: bool,
    **filters: Any,
) -> None:
    """Print a capture's timeline (default: the latest capture), or a view of it.

    With --view, CAPTURE may also be the path of a jsonl export (as in recordings/).

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

        print_view(db, capture, view, at, as_json)
        return
    if at is not None and at < 0:
        raise UsageError("--at takes a frame number (seq) of zero or more")
    store = open_store(db)
    c = store.capture(capture)
    keep = FrameFilter(**filters)
    marks: dict[int, list[Any]] = {}
    if with_check:
        from acp_proxy.check.source import by_seq, check_stored

        marks = by_seq(check_stored(store.frames(c["id"])))
    frames = (f for f in store.frames(c["id"], upto_seq=at) if keep(f))
    if as_json:
        objs = [frame_object(f, c["uid"]) for f in frames]
        if with_check:
            for o in objs:
                o["findings"] = [
                    {"rule": x.rule, "severity": x.severity, "side": x.side, "message": x.message}
                    for x in marks.get(o["seq"], [])
                ]
        dump_json({"capture": c, "frames": objs})
        return
    for line in capture_header(c):
        echo(line)
    events = store.events(c["id"]) if not any(filters.values()) else []
    for f in frames:
        while events and events[0]["t_ns"] <= f.frame.t_ns:
            echo(event_line(events.pop(0)))
        echo(frame_line(f, c["started_at"] if wall else None))
        for x in marks.get(f.seq, []):
            echo(f"{'':>12} ⚠ {x.severity} {x.rule} [{x.side}] {x.message}")
    for ev in events:
        echo(event_line(ev))
    if with_stderr:
        for _t, data in store.stderr(c["id"]):
            echo(data.decode("utf-8", "replace"), nl=False)


@click.command(context_settings=CONTEXT)
@db_option
@json_option
@click.option("-f", "--follow", is_flag=True, help="Keep printing new frames as they arrive.")
@click.option(
    "-n", "--lines", type=int, default=20, show_default=True, help="Frames of history first."
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

    path = db_path(db)
    while follow and not path.exists():
        time.sleep(interval)
    store = Store(path)
    cid = store.capture(capture)["id"] if capture else None
    last = store.max_rowid()
    filtering = any(v not in (None, False) for v in filters.values())
    history = store.last_frames(min(lines * 50, 100_000) if filtering else lines, cid)
    for f in [f for f in history if keep(f)][-lines:] if lines else []:
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

"""``acp-proxy show``: a capture's timeline (frames, events and stderr), or a view of it.

What belongs here: the ``show`` command — its options turned into a
:class:`~acp_proxy.reading.timeline.Timeline` (the window, the filters, the check marks),
and the timeline printed as text or as one JSON document (:mod:`acp_proxy.cli.show_json`).
The lines are made in :mod:`acp_proxy.text.timeline`; the other views (``--view turns``
...) are printed by :mod:`acp_proxy.cli.views`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from acp_proxy.cli.common import (
    CONTEXT,
    CaptureCommand,
    Int,
    Progress,
    db_path,
    echo,
    paged,
)
from acp_proxy.cli.options import (
    db_option,
    filter_options,
    grep_options,
    json_option,
    output_options,
)
from acp_proxy.errors import UsageError
from acp_proxy.reading import EventItem, FrameItem, Item, OpenCapture, Timeline, open_capture
from acp_proxy.reading import since_ns as since_offset
from acp_proxy.text.style import Styled

__all__ = ["show"]


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
@click.option(
    "--at", "at", type=Int(minimum=0), default=None, metavar="SEQ", help="Stop after frame SEQ."
)
@click.option(
    "--from",
    "from_seq",
    type=Int(minimum=0),
    default=None,
    metavar="SEQ",
    help="Start at frame SEQ.",
)
@click.option(
    "--since",
    metavar="TIME",
    help="Start at TIME: an offset into the capture (1.5s, 250ms, 2m) or a wall-clock time "
    "(14:03:07, local).",
)
@grep_options
@click.option(
    "--check",
    "with_check",
    is_flag=True,
    help="Mark the frames that break ACP (the rules of acp-proxy check).",
)
@filter_options
@output_options
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
    ignore_case: bool,
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
        acp-proxy show --filter 'method:session/* and not dir:a2c'
    """
    from acp_proxy.text.timeline import FrameFilter, Grep

    if view != "frames":
        frames_only = {"wall": wall, "stderr": with_stderr, "grep": grep is not None}
        frames_only |= {"from": from_seq is not None, "since": since is not None}
        _show_view(db, capture, view, at, as_json, no_pager, filters, frames_only)
        return
    cap = open_capture(db_path(db), capture)
    c = cap.capture
    keep = FrameFilter.of(filters)
    match = Grep(grep, ignore_case) if grep is not None else None
    timeline = Timeline(
        cap,
        from_seq=from_seq,
        at=at,
        since=None if since is None else since_offset(since, c["started_at"]),
        keep=keep,
        scan=None if match is None else match.raw,  # the bytes of every frame, read alone
        progress=None if match is None else _scan_progress(c, at),
    )
    marks = timeline.check_marks() if with_check else {}
    filtering = keep.active
    show_stderr = with_stderr if with_stderr is not None else not filtering
    if as_json:
        from acp_proxy.cli.show_json import show_json

        show_json(
            c,
            timeline.frames(),
            timeline.items(stderr=show_stderr, events=False),
            timeline.items(stderr=False),  # events stay: they are the lifecycle
            match,
            marks if with_check else None,
        )
        return
    items = timeline.items(timeline.frames(), stderr=show_stderr)  # events stay with any filter
    with paged(not no_pager):
        shown = _print_timeline(cap, timeline, items, match, marks, wall=wall,
                                to_end=timeline.ended and at is None)  # fmt: skip
    if shown == 0 and (filtering or match is not None):
        echo("acp-proxy: no frame matches (the events and stderr shown are not filtered)"
             if match is None else "acp-proxy: no frame matches", err=True)  # fmt: skip


def _scan_progress(c: dict[str, Any], at: int | None) -> Progress:
    """Progress of ``--grep`` through capture ``c`` (up to frame ``at``)."""
    total = c.get("message_count") or 0
    return Progress(f"searching capture {c['id']}", total if at is None else min(total, at + 1))


def _show_view(
    db: Path | None,
    capture: str | None,
    view: str,
    at: int | None,
    as_json: bool,
    no_pager: bool,
    filters: dict[str, Any],
    frames_only: dict[str, bool | None],
) -> None:
    """``show --view ...``: refused with an option only the frames take (the filters but
    ``--session``, and ``frames_only``: option name, given)."""
    from acp_proxy.cli.views import print_view

    session = filters.pop("session", None)
    given = [f"--{k}" for k, v in filters.items() if v not in (None, False)]
    given += [f"--{k}" for k, v in frames_only.items() if v]
    if given:
        raise UsageError(f"{given[0]} does not apply to --view {view} (--session and --at do)")
    with paged(not no_pager and not as_json):
        print_view(db, capture, view, at, as_json, session=session)


def _print_timeline(
    cap: OpenCapture,
    timeline: Timeline,
    items: Iterator[Item],
    match: Any,
    marks: dict[int, list[Any]],
    *,
    wall: bool,
    to_end: bool,
) -> int:
    """The timeline as text: the header, then each item at its time; when it was read
    ``to_end`` of an ended capture, the requests never answered. How many frames it
    showed."""
    from acp_proxy.text.captures import capture_header
    from acp_proxy.text.timeline import event_parts, frame_parts, seq_width, stderr_parts

    c = cap.capture
    started = c["started_at"] if wall else None
    width = seq_width(max(c.get("message_count") or 0, 1) - 1)
    for line in capture_header(c, cap.events()):
        echo(line)
    shown = 0
    for item in items:
        if isinstance(item, FrameItem):
            shown += 1
            echo(frame_parts(item.frame, started, width))
            for x in marks.get(item.frame.seq, []):
                echo(f"{'':>12} ⚠ {x.severity} {x.rule} [{x.side}] {x.message}")
        elif isinstance(item, EventItem):
            if match is None or match.text(_event_text(item.event)):
                echo(event_parts(item.event, width, started))
        else:
            for said in stderr_parts(item.t_ns, item.data, width, started):
                if match is None or match.text(str(said)):
                    echo(said)
    if to_end:
        _print_unanswered(cap, timeline)
    return shown


def _event_text(ev: dict[str, Any]) -> str:
    """What --grep searches in an event: its kind, its readable line and its detail."""
    from acp_proxy.events import describe
    from acp_proxy.text.timeline import event_detail

    return f"{ev['kind']} {describe(str(ev['kind']), event_detail(ev))} {ev.get('detail') or ''}"


def _print_unanswered(cap: OpenCapture, timeline: Timeline) -> None:
    from acp_proxy.text.captures import cut_short

    open_requests = timeline.unanswered()
    if open_requests:
        shown = ", ".join(f"#{seq} {m}" for seq, m in open_requests[:8])
        more = f" and {len(open_requests) - 8} more" if len(open_requests) > 8 else ""
        echo(
            Styled.of(
                (
                    f"  {len(open_requests)} request(s) never answered "
                    f"({cut_short(cap.capture, cap.events())} first): {shown}{more}",
                    "anomaly",
                )
            )
        )

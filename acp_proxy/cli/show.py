"""``acp-proxy show``: a capture's timeline (frames, events, stderr), or a view of it.

What belongs here: the ``show`` command — reading its options, merging frames, events and
stderr in time order, and printing the timeline as text or streaming it as one JSON
document. The lines themselves are made in :mod:`acp_proxy.text.timeline`; the other views
(``--view turns`` ...) are printed by :mod:`acp_proxy.cli.views`.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from acp_proxy.cli.common import (
    CONTEXT,
    CaptureCommand,
    Int,
    db_path,
    echo,
    open_store,
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
from acp_proxy.store.numbers import INT64_MAX
from acp_proxy.store.reader import Store, StoredFrame
from acp_proxy.store.refs import ExportStore, is_file_ref, resolve
from acp_proxy.text.style import Styled

__all__ = ["show"]


def _since(value: str, started_at: str) -> int:
    """``--since``: an offset into the capture (``1.5s``, ``250ms``, ``2m``, ``3`` seconds)
    or a wall-clock time (``14:03:07``, local, on the capture's start date, or ISO 8601),
    as ns since the capture started."""
    import re
    from datetime import datetime

    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*(ms|s|m|h)?\s*", value)
    if m:
        unit = {"ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9}[m.group(2) or "s"]
        return _ns(float(m.group(1)) * unit, value)
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
    return max(_ns((when - base).total_seconds() * 1e9, value), 0)


def _ns(ns: float, value: str) -> int:
    """An offset in nanoseconds, as the database compares them (64 bits: 292 years)."""
    if not ns < INT64_MAX:
        raise UsageError(f"--since {value.strip()[:40]!r} is further than a capture can last")
    return int(ns)


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
    """
    from acp_proxy.store.liveness import capture_state
    from acp_proxy.text.timeline import FrameFilter, Grep

    if view != "frames":
        frames_only = {"wall": wall, "stderr": with_stderr, "grep": grep is not None}
        frames_only |= {"from": from_seq is not None, "since": since is not None}
        _show_view(db, capture, view, at, as_json, no_pager, filters, frames_only)
        return
    store, c = _open(db, capture)
    ended = capture_state(c) != "recording"
    first_t = None if since is None else _since(since, c["started_at"])
    keep = FrameFilter(**filters)
    match = Grep(grep, ignore_case) if grep is not None else None
    marks = _check_marks(store, c, ended) if with_check else {}
    after = -1 if from_seq is None else from_seq - 1
    frames = (
        f
        for f in store.frames(c["id"], after_seq=after, upto_seq=at, from_t_ns=first_t, ended=ended)
        if keep(f) and (match is None or match(f))
    )
    filtering = any(v not in (None, False) for v in filters.values())
    first_t, last_t = _bounds(store, c, first_t, from_seq, at)
    show_stderr = with_stderr if with_stderr is not None else not filtering

    def merged(frames: Iterator[StoredFrame], events: bool, stderr: bool) -> Iterator[Any]:
        return _timeline(
            store, c, frames, events=events, stderr=stderr, first_t=first_t, last_t=last_t
        )

    if as_json:
        from acp_proxy.cli.show_json import show_json

        show_json(
            c,
            merged(frames, False, False),
            merged(iter(()), False, show_stderr),
            merged(iter(()), True, False),  # events stay: they are the lifecycle
            match,
            marks if with_check else None,
        )
        return
    items = merged(frames, True, show_stderr)  # events stay with any filter
    with paged(not no_pager):
        shown = _print_timeline(store, c, items, match, marks, wall=wall,
                                to_end=ended and at is None)  # fmt: skip
    if shown == 0 and (filtering or match is not None):
        echo("acp-proxy: no frame matches (the events and stderr shown are not filtered)"
             if match is None else "acp-proxy: no frame matches", err=True)  # fmt: skip


def _bounds(
    store: Any, c: dict[str, Any], first_t: int | None, from_seq: int | None, at: int | None
) -> tuple[int | None, int | None]:
    """The span of time the events and stderr are shown in: from ``--since`` (``first_t``)
    or the time of frame ``--from``, to the time of frame ``--at``."""
    if from_seq is not None and first_t is None:
        first = next(store.frames(c["id"], after_seq=from_seq - 1, limit=1), None)
        first_t = first.frame.t_ns if first is not None else None
    last_t = None
    if at is not None:
        last = list(store.frames(c["id"], after_seq=at - 1, upto_seq=at))
        last_t = last[0].frame.t_ns if last else None
    return first_t, last_t


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


def _open(db: Path | None, capture: str | None) -> tuple[Any, dict[str, Any]]:
    """The store and the capture: an export reads as the database does (the same timeline)."""
    if is_file_ref(capture):
        source = resolve(capture, db_path(db))
        return ExportStore(source), source.capture
    store = open_store(db)
    return store, store.capture(capture)


def _print_timeline(
    store: Any,
    c: dict[str, Any],
    items: Iterator[tuple[int, int, Any]],
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

    started = c["started_at"] if wall else None
    width = seq_width(max(c.get("message_count") or 0, 1) - 1)
    for line in capture_header(c, store.events(c["id"])):
        echo(line)
    shown = 0
    for _t, rank, item in items:
        if rank == 1:
            shown += 1
            echo(frame_parts(item, started, width))
            for x in marks.get(item.seq, []):
                echo(f"{'':>12} ⚠ {x.severity} {x.rule} [{x.side}] {x.message}")
        elif rank == 0:
            if match is None or match.text(_event_text(item)):
                echo(event_parts(item, width, started))
        else:
            for said in stderr_parts(_t, item, width, started):
                if match is None or match.text(str(said)):
                    echo(said)
    if to_end:
        _print_unanswered(store, c)
    return shown


def _event_text(ev: dict[str, Any]) -> str:
    """What --grep searches in an event: its kind, its readable line and its detail."""
    from acp_proxy.events import describe
    from acp_proxy.text.timeline import event_detail

    return f"{ev['kind']} {describe(str(ev['kind']), event_detail(ev))} {ev.get('detail') or ''}"


def _check_marks(store: Any, c: dict[str, Any], ended: bool) -> dict[int, list[Any]]:
    """The findings of ``acp-proxy check``, by the frame they are about."""
    from acp_proxy.check.source import by_seq, check_stored
    from acp_proxy.events.ending import capture_ending

    ending = capture_ending(c, store.events(c["id"])) if ended else None
    return by_seq(check_stored(store.frames(c["id"]), ending=ending))


def _print_unanswered(store: Any, c: dict[str, Any]) -> None:
    from acp_proxy.text.captures import cut_short

    open_requests = store.unanswered(c["id"])
    if open_requests:
        shown = ", ".join(f"#{seq} {m}" for seq, m in open_requests[:8])
        more = f" and {len(open_requests) - 8} more" if len(open_requests) > 8 else ""
        echo(
            Styled.of(
                (
                    f"  {len(open_requests)} request(s) never answered "
                    f"({cut_short(c, store.events(c['id']))} first): {shown}{more}",
                    "anomaly",
                )
            )
        )

"""Reconstruction views: ``tools``, ``terminals``, ``diffs``, and ``show --view``.

Thin click commands: the capture is opened, folded and viewed by :mod:`acp_proxy.reading`,
the text made by :mod:`acp_proxy.text.views`. ``CAPTURE`` is a capture of the database
(id, uid prefix, ``-1`` for the latest; default the latest) or the path of a ``jsonl``
export such as the samples in ``recordings/``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

from acp_proxy.cli.common import (
    CONTEXT,
    CaptureCommand,
    Int,
    Progress,
    colour_on,
    db_path,
    dump_json,
    echo_lines,
    paged,
)
from acp_proxy.cli.options import db_option, json_option, output_options
from acp_proxy.errors import UsageError
from acp_proxy.protocol.frames import Frame
from acp_proxy.reading import EndNotes, OpenCapture, open_capture, plain_frames, reconstruction
from acp_proxy.reading.views import (
    PARTS_OF,
    SELECTED,
    STREAMED,
    VIEWS,
    WITHOUT_TEXT,
    view_reconstruction,
    write_json_view,
)
from acp_proxy.reconstruct import Reconstruction
from acp_proxy.text.views import diffs_lines, terminals_lines, tools_lines

__all__ = [
    "SHOW_VIEWS",
    "diffs",
    "load_frames",
    "print_view",
    "terminals",
    "tools",
]

SHOW_VIEWS = ("frames", *VIEWS)


def load_frames(db: Path | None, capture: str | None, at: int | None = None) -> Iterator[Frame]:
    """The frames of ``capture`` (up to ``at``), from a ``jsonl`` export or the database,
    with progress on stderr while a large capture is read."""
    cap = open_capture(db_path(db), capture)
    return plain_frames(cap, at, None if cap.is_file else _progress(cap.capture, at))


def _progress(c: dict[str, Any], at: int | None) -> Progress:
    """Progress of reading capture ``c`` (up to ``at``)."""
    total = c.get("message_count") or 0
    if at is not None:
        total = min(total, at + 1)
    return Progress(f"reading capture {c['id']}", total)


def _print_json_view(cap: OpenCapture, view: str, at: int | None, session: str | None) -> None:
    """``VIEW --json`` for the views written as they are folded."""
    if cap.is_file:
        write_json_view(cap, view, sys.stdout.buffer, at, session=session)
        return
    with _progress(cap.capture, at) as p:
        write_json_view(cap, view, sys.stdout.buffer, at, session=session, progress=p)


def _reconstruction(
    cap: OpenCapture, at: int | None, session: str | None = None, view: str | None = None
) -> Reconstruction:
    progress = None if cap.is_file else _progress(cap.capture, at)
    parts, text = PARTS_OF.get(view or ""), view not in WITHOUT_TEXT
    return reconstruction(cap, at, session=session, progress=progress, parts=parts, text=text)


def _view_reconstruction(
    cap: OpenCapture, view: str, at: int | None, session: str | None = None
) -> Reconstruction:
    """What the text of ``view`` is made from: from the frames it needs alone where that
    is exact (the cost of its ``--json``), else from every frame."""
    if not cap.is_file and view in SELECTED:
        with _progress(cap.capture, at) as p:
            r = view_reconstruction(cap, view, at, session=session, progress=p)
        if r is not None:
            return r
    return _reconstruction(cap, at, session, view)


def at_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--at",
        "at",
        type=Int(minimum=0),
        default=None,
        metavar="SEQ",
        help="Show the state after frame SEQ (as the user saw it then).",
    )(fn)


def _view(name: str, doc: str, to_lines: Callable[..., Any]) -> click.Command:
    @click.command(name, cls=CaptureCommand, context_settings=CONTEXT, help=doc)
    @db_option
    @json_option
    @at_option
    @click.argument("capture", required=False)
    @output_options
    def command(
        db: Path | None, as_json: bool, at: int | None, capture: str | None, no_pager: bool
    ) -> None:
        with open_capture(db_path(db), capture) as cap:
            if as_json:
                _print_json_view(cap, name, at, None)
                return
            r = _view_reconstruction(cap, name, at)
            with paged(not no_pager):
                echo_lines(_lines(to_lines, r, cap.end_notes(at)))

    return command


def print_view(
    db: Path | None,
    capture: str | None,
    view: str,
    at: int | None,
    as_json: bool,
    *,
    session: str | None = None,
) -> None:
    """``acp-proxy show --view VIEW``: one reconstruction view, as text or JSON."""
    from acp_proxy.text.views import (
        files_lines,
        permissions_lines,
        sessions_lines,
        turns_lines,
    )

    text: dict[str, Callable[..., Any]] = {
        "turns": turns_lines,
        "tools": tools_lines,
        "permissions": permissions_lines,
        "terminals": terminals_lines,
        "diffs": diffs_lines,
        "files": files_lines,
        "sessions": sessions_lines,
    }
    if view not in VIEWS:
        raise UsageError(f"no view {view!r} (choose from {', '.join(SHOW_VIEWS)})")
    with open_capture(db_path(db), capture) as cap:
        if as_json and view in STREAMED:
            _print_json_view(cap, view, at, session)
            return
        r = _view_reconstruction(cap, view, at, session)
        notes = cap.end_notes(at)
        if as_json:
            out = VIEWS[view](r)
            if view == "turns":
                for t in out:
                    t["cutShort"] = notes.reason if t["endedSeq"] is None else None
            dump_json(out)
            return
        echo_lines(_lines(text[view], r, notes))


def _lines(to_lines: Callable[..., Any], r: Reconstruction, notes: EndNotes) -> Iterator[Any]:
    from acp_proxy.text.views import turns_lines

    if to_lines is turns_lines:
        return turns_lines(r, cut_short=notes.reason, stderr=list(notes.stderr))
    if to_lines is terminals_lines:
        return terminals_lines(r, colour=colour_on())
    return iter(to_lines(r))


tools = _view(
    "tools",
    """Tool calls: title, kind, status history with times, content, locations.

    \b
    Example:
        acp-proxy tools 3 --at 120
        acp-proxy tools recordings/demo-v1.jsonl --json
    """,
    tools_lines,
)
terminals = _view(
    "terminals",
    """Terminals as the user saw them: command, exit status, rendered screen.

    v2 agent-owned terminals (terminal_update, terminal_output_chunk) and v1
    client-owned ones (terminal/create, terminal/output). --json gives the exact
    bytes (output_base64), the decoded text and the screen lines.

    \b
    Example:
        acp-proxy terminals --json | jq -r '.[0].screen[]'
    """,
    terminals_lines,
)
diffs = _view(
    "diffs",
    """File changes: tool-call diffs and fs writes, as unified diffs, stale edits flagged.

    \b
    Example:
        acp-proxy diffs 3
        acp-proxy export 3 --format patch | git apply --check
    """,
    diffs_lines,
)

"""Reconstruction views: ``tools``, ``terminals``, ``diffs``.

Thin click commands; the folds are in
:mod:`acp_proxy.reconstruct`, the text in :mod:`acp_proxy.text.views`. ``CAPTURE`` is a capture
of the database (id, uid prefix, ``-1`` for the latest; default the latest) or the path of
a ``jsonl`` export such as the samples in ``recordings/``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import click

from acp_proxy.cli.common import (
    CONTEXT,
    CaptureCommand,
    Int,
    Progress,
    check_at,
    colour_on,
    db_path,
    dump_json,
    echo,
    open_store,
    paged,
)
from acp_proxy.cli.options import db_option, json_option, output_options
from acp_proxy.errors import UsageError
from acp_proxy.protocol.frames import Frame
from acp_proxy.reconstruct import Reconstruction, reconstruct
from acp_proxy.store.refs import is_file_ref, resolve
from acp_proxy.text.views import diffs_lines, terminals_lines, tools_lines

__all__ = [
    "SHOW_VIEWS",
    "diffs",
    "export_text",
    "load_frames",
    "load_reconstruction",
    "print_json_view",
    "print_view",
    "terminals",
    "tools",
]

SHOW_VIEWS = (
    "frames",
    "turns",
    "tools",
    "permissions",
    "terminals",
    "diffs",
    "files",
    "sessions",
)


def load_frames(db: Path | None, capture: str | None, at: int | None = None) -> Iterator[Frame]:
    """The frames of ``capture`` (up to ``at``), from a ``jsonl`` export or the database."""
    source = resolve(capture, db_path(db))
    if source.is_file:
        return (sf.frame for sf in source.frames(upto_seq=at))
    return _progress(source.capture, at).wrap(source.plain_frames(upto_seq=at))


def _progress(c: dict[str, Any], at: int | None) -> Progress:
    """Progress of reading capture ``c`` (up to ``at``)."""
    total = c.get("message_count") or 0
    if at is not None:
        total = min(total, at + 1)
    return Progress(f"reading capture {c['id']}", total)


def print_json_view(
    db: Path | None, capture: str | None, view: str, at: int | None, session: str | None = None
) -> None:
    """``VIEW --json`` for ``tools``, ``terminals`` and ``diffs``: written as it is folded
    (:func:`~acp_proxy.export.listing.write_view`)."""
    from acp_proxy.export.listing import write_view

    check_at(at)
    source = resolve(capture, db_path(db))
    try:
        if source.is_file:
            write_view(source, view, sys.stdout.buffer, at=at, session=session)
            return
        with _progress(source.capture, at) as p:
            write_view(source, view, sys.stdout.buffer, at=at, session=session, progress=p)
    finally:
        source.close()


def load_reconstruction(
    db: Path | None, capture: str | None, at: int | None, *, session: str | None = None
) -> Reconstruction:
    check_at(at)
    r = reconstruct(load_frames(db, capture, at), at=at)
    if session is not None:
        r.only_session(session)
    return r


class Ending:
    """What a view says of a capture's end: why its open turns were cut short, and the
    agent's stderr (a crash's explanation is usually there). Empty for a jsonl export."""

    def __init__(self, db: Path | None, capture: str | None, at: int | None) -> None:
        self.reason: str | None = None
        self.stderr: list[tuple[int, bytes]] = []
        if is_file_ref(capture):
            return
        from acp_proxy.store.liveness import capture_state
        from acp_proxy.text.captures import cut_short

        store = open_store(db)
        c = store.capture(capture)
        if at is None and capture_state(c) != "recording":
            self.reason = cut_short(c, store.events(c["id"]))
        self.stderr = list(store.stderr(c["id"]))


def at_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--at",
        "at",
        type=Int(),
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
        if as_json:
            print_json_view(db, capture, name, at)
            return
        r = load_reconstruction(db, capture, at)
        with paged(not no_pager):
            for line in _lines(to_lines, r, Ending(db, capture, at)):
                echo(line)

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
    from acp_proxy.reconstruct import views
    from acp_proxy.text.views import (
        diffs_lines,
        files_lines,
        permissions_lines,
        sessions_lines,
        terminals_lines,
        tools_lines,
        turns_lines,
    )

    table: dict[str, tuple[Callable[[Reconstruction], Any], Callable[..., Any]]] = {
        "turns": (views.turns_json, turns_lines),
        "tools": (views.tools_json, tools_lines),
        "permissions": (views.permissions_json, permissions_lines),
        "terminals": (views.terminals_json, terminals_lines),
        "diffs": (views.diffs_json, diffs_lines),
        "files": (views.files_json, files_lines),
        "sessions": (views.sessions_json, sessions_lines),
    }
    if view not in table:
        raise UsageError(f"no view {view!r} (choose from {', '.join(SHOW_VIEWS)})")
    if as_json and view in ("tools", "terminals", "diffs"):
        print_json_view(db, capture, view, at, session)
        return
    r = load_reconstruction(db, capture, at, session=session)
    to_json, to_lines = table[view]
    ending = Ending(db, capture, at)
    if as_json:
        out = to_json(r)
        if view == "turns":
            for t in out:
                t["cutShort"] = ending.reason if t["endedSeq"] is None else None
        dump_json(out)
        return
    for line in _lines(to_lines, r, ending):
        echo(line)


def _lines(to_lines: Callable[..., Any], r: Reconstruction, ending: Ending) -> Iterator[Any]:
    from acp_proxy.text.views import terminals_lines, turns_lines

    if to_lines is turns_lines:
        return turns_lines(r, cut_short=ending.reason, stderr=ending.stderr)
    if to_lines is terminals_lines:
        return terminals_lines(r, colour=colour_on())
    return iter(to_lines(r))


def export_text(
    db: Path | None,
    capture: str | None,
    fmt: str,
    terminal: str | None,
    frames: Iterable[Frame] | None = None,
) -> tuple[str, list[str]]:
    """The text of an ``asciicast`` or ``patch`` export, and warnings for stderr; from
    ``frames`` when given (a redacted capture), else from ``capture``."""
    from acp_proxy.export.core.asciicast import asciicast
    from acp_proxy.export.core.patch import session_patch

    r = reconstruct(frames) if frames is not None else load_reconstruction(db, capture, None)
    if fmt == "patch":
        result = session_patch(r)
        notes = [f"skipped {path}: {why}" for path, why in result.skipped]
        if not result.text:
            notes.append("no text changes whose contents or patch text are known")
        return result.text, notes
    terms = list(r.terminals.values())
    if terminal is None:
        if len(terms) != 1:
            ids = ", ".join(t.terminal_id for t in terms) or "none"
            raise UsageError(f"give --terminal ID (terminals in this capture: {ids})")
        return asciicast(terms[0]), []
    found = [t for t in terms if t.terminal_id == terminal]
    if not found:
        ids = ", ".join(t.terminal_id for t in terms) or "none"
        raise UsageError(f"no terminal {terminal!r} (terminals in this capture: {ids})")
    notes = [] if len(found) == 1 else [f"{terminal} is in several sessions; using the first"]
    return asciicast(found[0]), notes


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

"""The ``acp-proxy`` command line (layer 4): thin click commands, no logic of their own.

Every command takes ``--db PATH`` (else ``$ACP_PROXY_DB``, else the default path). Errors
are one line on stderr and a non-zero exit; a traceback means a bug.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import click
import orjson

from . import __version__
from .errors import AgentSpawnError, ProxyError, UsageError
from .store import Store, StoredFrame, default_db_path

__all__ = ["main"]

F = TypeVar("F", bound=Callable[..., Any])
CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def _fail(message: str, code: int) -> None:
    click.echo(f"acp-proxy: error: {message}", err=True)
    sys.exit(code)


def handle_errors(fn: F) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ProxyError as e:
            _fail(str(e), e.exit_code)
        except BrokenPipeError:  # `acp-proxy show | head`
            os._exit(0)
        return None

    return wrapper  # type: ignore[return-value]


def db_option(fn: F) -> F:
    return click.option(
        "--db",
        "db",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Recordings database (default: $ACP_PROXY_DB, else "
        "$XDG_STATE_HOME/acp-proxy/recordings.sqlite).",
    )(fn)


def json_option(fn: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")(fn)


def filter_options(fn: F) -> F:
    """--method/--kind/--session/--direction/--update, shared by the frame listings."""
    for opt in reversed(
        [
            click.option(
                "--method", "method", metavar="GLOB", help="Only methods matching, e.g. 'fs/*'."
            ),
            click.option(
                "--kind",
                "kind",
                type=click.Choice(
                    ["request", "notification", "response", "error", "batch", "invalid"]
                ),
                help="Only frames of this kind.",
            ),
            click.option("--session", "session", metavar="ID", help="Only this ACP session."),
            click.option(
                "--direction",
                "direction",
                type=click.Choice(["c2a", "a2c"]),
                help="c2a: client→agent; a2c: agent→client.",
            ),
            click.option(
                "--update",
                "update",
                metavar="GLOB",
                help="Only session/update kinds matching, e.g. 'tool_call*'.",
            ),
            click.option("--anomalous", is_flag=True, help="Only frames with anomalies."),
        ]
    ):
        fn = opt(fn)
    return fn


def _db(db: Path | None) -> Path:
    return db if db is not None else default_db_path()


def _open(db: Path | None) -> Store:
    return Store(_db(db))


def _dump(v: Any) -> None:
    click.echo(orjson.dumps(v, option=orjson.OPT_INDENT_2, default=str).decode())


class LazyGroup(click.Group):
    """Commands in their own modules are imported only when used, so that ``record`` starts
    fast (the agent is spawned sooner) and ``--help`` stays cheap."""

    lazy: ClassVar[dict[str, str]] = {  # command name -> module that registers it on ``main``
        "tools": "cli_views",
        "terminals": "cli_views",
        "diffs": "cli_views",
        "ws": "cli_ws",
        "replay": "cli_replay",
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            importlib.import_module(f"proxy.{self.lazy[cmd_name]}")
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, context_settings=CONTEXT)
@click.version_option(__version__, "-V", "--version", prog_name="acp-proxy")
def main() -> None:
    """A transparent recording proxy for the Agent Client Protocol (ACP).

    \b
    Put it in front of an agent in your editor's agent settings:
        acp-proxy record -- my-agent --flag
    then look at what was said:
        acp-proxy captures
        acp-proxy show
        acp-proxy tail -f
    """


@main.command(
    context_settings={**CONTEXT, "ignore_unknown_options": True, "allow_interspersed_args": False}
)
@db_option
@click.option("--label", help="A note stored with the capture.")
@click.option(
    "--upstream",
    metavar="URL",
    help="Relay to a remote WebSocket agent (ws://host:port/acp) instead of running a command.",
)
@click.option(
    "--header",
    "headers",
    multiple=True,
    metavar="'NAME: VALUE'",
    help="With --upstream: a header for the upgrade request (repeatable), e.g. "
    "'Authorization: Bearer TOKEN'. Stored redacted.",
)
@click.option(
    "--grace",
    type=float,
    default=3.0,
    show_default=True,
    help="Seconds to wait after the client closes stdin before terminating the agent.",
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def record(
    db: Path | None,
    label: str | None,
    upstream: str | None,
    headers: tuple[str, ...],
    grace: float,
    command: tuple[str, ...],
) -> None:
    """Run an agent, relay its stdio byte for byte, and record every message.

    \b
    Example (an editor's agent command):
        acp-proxy record --db ~/acp.sqlite -- npx my-acp-agent --verbose

    \b
    With --upstream, an editor that only speaks stdio reaches a remote WebSocket agent:
        acp-proxy record --upstream ws://host:8000/acp --header 'Authorization: Bearer T'

    Nothing is written to stdout but the agent's own bytes; the agent's exit code becomes
    ours (128+N when it dies of signal N).
    """
    from .recorder import Writer, tune_relay_process
    from .relay import record_stdio

    argv = list(command)
    if argv and argv[0] == "--":
        argv = argv[1:]
    elif argv and argv[0].startswith("-"):
        _fail(f"no such option: {argv[0]} (the agent command goes after --)", 2)
    if upstream is not None:
        if argv:
            _fail("give either --upstream URL or an agent command, not both", 2)
        from .cli_ws import record_upstream

        os._exit(record_upstream(_db(db), upstream, label=label, headers=headers))
    if headers:
        _fail("--header goes with --upstream", 2)
    if not argv:
        _fail("no agent command given (usage: acp-proxy record -- CMD ...)", 2)
    if grace < 0:
        _fail("--grace must be zero or more seconds", 2)
    tune_relay_process()
    writer = Writer(_db(db))
    code = 1
    try:
        code = record_stdio(argv, writer, label=label, grace=grace)
    except AgentSpawnError as e:
        click.echo(f"acp-proxy: {e}", err=True)
        code = e.exit_code
    finally:
        writer.close()
        sys.stderr.flush()
    os._exit(code)


@main.command(context_settings=CONTEXT)
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
    from .report import capture_row

    store = _open(db)
    rows = [capture_row(c) for c in store.captures(limit)]
    if as_json:
        _dump(rows)
        return
    if not rows:
        click.echo(f"no captures in {store.path}", err=True)
        return
    click.echo(
        f"{'id':>4}  {'started (UTC)':<19}  {'dur':>7}  {'proto':>5}  {'msgs':>6}  "
        f"{'status':<9}  {'client ⇄ agent':<34}  command"
    )
    for r in rows:
        dur = "running" if r["duration_s"] is None else f"{r['duration_s']:.2f}s"
        peers = f"{r['client'] or '?'} ⇄ {r['agent'] or '?'}"
        proto = f"v{r['protocol_version']}" if r["protocol_version"] is not None else "-"
        click.echo(
            f"{r['id']:>4}  {r['started_at'][:19].replace('T', ' '):<19}  {dur:>7}  "
            f"{proto:>5}  {r['messages']:>6}  {r['status']:<9}  {peers:<34}  "
            f"{r['agent_command']}"
        )


@main.command(context_settings=CONTEXT)
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

    With --view, CAPTURE may also be the path of a jsonl export (as in recordings/).

    \b
    Example:
        acp-proxy show 3 --wall
        acp-proxy show 3 --view turns
        acp-proxy show --view permissions --at 120
        acp-proxy show --method 'fs/*' --direction a2c
    """
    from .export import frame_object
    from .report import FrameFilter, capture_header, event_line, frame_line

    if view != "frames":
        from .cli_views import print_view

        print_view(db, capture, view, at, as_json)
        return
    if at is not None and at < 0:
        raise UsageError("--at takes a frame number (seq) of zero or more")
    store = _open(db)
    c = store.capture(capture)
    keep = FrameFilter(**filters)
    frames = (f for f in store.frames(c["id"], upto_seq=at) if keep(f))
    if as_json:
        _dump({"capture": c, "frames": [frame_object(f, c["uid"]) for f in frames]})
        return
    for line in capture_header(c):
        click.echo(line)
    events = store.events(c["id"]) if not any(filters.values()) else []
    for f in frames:
        while events and events[0]["t_ns"] <= f.frame.t_ns:
            click.echo(event_line(events.pop(0)))
        click.echo(frame_line(f, c["started_at"] if wall else None))
    for ev in events:
        click.echo(event_line(ev))
    if with_stderr:
        for _t, data in store.stderr(c["id"]):
            click.echo(data.decode("utf-8", "replace"), nl=False, err=False)


@main.command(context_settings=CONTEXT)
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
    from .export import frame_object
    from .report import FrameFilter, frame_line

    keep = FrameFilter(**filters)
    uids: dict[int, str] = {}

    def emit(f: StoredFrame) -> None:
        if not keep(f):
            return
        if as_json:
            if f.capture_id not in uids:
                uids[f.capture_id] = store.capture(f.capture_id)["uid"]
            click.echo(orjson.dumps(frame_object(f, uids[f.capture_id])).decode())
        else:
            click.echo(f"c{f.capture_id} {frame_line(f)}")

    path = _db(db)
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
                last = f.rowid
            if new:
                sys.stdout.flush()
            else:
                time.sleep(interval)
    except KeyboardInterrupt:
        return


@main.command(context_settings=CONTEXT)
@db_option
@click.argument("capture", required=False)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "asciicast", "patch", "html"]),
    default="jsonl",
    show_default=True,
    help="jsonl: every frame, exact bytes; asciicast: one terminal (v2 asciicast, recorded "
    "timing); patch: the file changes as one patch for git apply; html: a page to open in "
    "a browser (turns, tool calls, terminals, diffs, every frame).",
)
@click.option("--terminal", metavar="ID", help="The terminal to export as asciicast.")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write to a file instead of stdout.",
)
@handle_errors
def export(
    db: Path | None, capture: str | None, fmt: str, terminal: str | None, output: Path | None
) -> None:
    """Export a capture (default: the latest) with its exact bytes, a terminal, or a patch.

    \b
    Example:
        acp-proxy export 3 --format jsonl -o session.jsonl
        acp-proxy export 3 --format asciicast --terminal term_1 -o t.cast && asciinema play t.cast
        acp-proxy export 3 --format patch | git apply
        acp-proxy export 3 --format html -o capture.html
    """
    from .export import write_jsonl

    if fmt == "html":
        from .html_report import render_html

        store = _open(db)
        c = store.capture(capture)
        page = render_html(c, store.frames(c["id"]))
        if output is not None:
            output.write_text(page, encoding="utf-8")
            click.echo(f"wrote {output}", err=True)
        else:
            sys.stdout.write(page)
        return
    if fmt != "jsonl":
        from .cli_views import export_text

        text, notes = export_text(db, capture, fmt, terminal)
        for note in notes:
            click.echo(f"acp-proxy: {note}", err=True)
        if output is not None:
            output.write_text(text, encoding="utf-8")
            click.echo(f"wrote {fmt} to {output}", err=True)
        else:
            sys.stdout.write(text)
        return
    if terminal is not None:
        raise UsageError("--terminal goes with --format asciicast")
    store = _open(db)
    c = store.capture(capture)
    frames = store.frames(c["id"])
    if output is not None:
        with open(output, "wb") as out:
            n = write_jsonl(frames, c["uid"], out)
        click.echo(f"wrote {n} frames to {output}", err=True)
    else:
        write_jsonl(frames, c["uid"], sys.stdout.buffer)


@main.command("import-spill", context_settings=CONTEXT)
@db_option
@click.argument("files", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@handle_errors
def import_spill_cmd(db: Path | None, files: tuple[Path, ...]) -> None:
    """Bring spilled records (written while the database was unwritable) into it.

    \b
    Example:
        acp-proxy import-spill --db ~/acp.sqlite
    With no FILES, every spill file next to the database is imported.
    """
    from .recorder import import_spill, spill_files
    from .store import connect, migrate

    path = _db(db)
    conn = connect(path)
    migrate(conn)
    todo = list(files) or spill_files(path)
    if not todo:
        click.echo(f"no spill files next to {path}", err=True)
        return
    for f in todo:
        n = import_spill(conn, f)
        if n is None:
            click.echo(f"{f}: still being written by a running recorder; skipped", err=True)
        else:
            click.echo(f"{f}: imported {n} frames", err=True)


@main.command(context_settings=CONTEXT)
@db_option
@click.option("--keep-going", is_flag=True, hidden=True)
@handle_errors
def demo(db: Path | None, keep_going: bool) -> None:
    """Run a bundled demo client and agent through the proxy and show the recording.

    No network and no keys: a realistic ACP v1 session (prompts, streamed chunks, a plan,
    tool calls with diff and terminal content, a permission prompt, file reads and writes,
    a terminal, custom methods, _meta, cancellation) is recorded into the database.

    \b
    Example:
        acp-proxy demo --db /tmp/demo.sqlite
    """
    from .demo import run_demo

    path = _db(db)
    capture_id = run_demo(path)
    store = Store(path)
    from .report import capture_header, frame_line

    c = store.capture(capture_id)
    for line in capture_header(c):
        click.echo(line)
    for f in store.frames(c["id"]):
        click.echo(frame_line(f))
    click.echo("")
    click.echo(f"recorded capture {c['id']} into {path}")
    click.echo(f"next: acp-proxy show {c['id']} --db {path}   |   acp-proxy captures --db {path}")
    if c.get("exit_code") not in (0, None):
        raise UsageError(f"demo agent exited with {c['exit_code']}")


if __name__ == "__main__":  # pragma: no cover
    # Under `python -m proxy.cli` this module is __main__; the command modules register on
    # proxy.cli.main, so run that group.
    from proxy.cli import main as _main

    _main()

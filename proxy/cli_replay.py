"""Replay commands: ``replay agent`` and ``replay client`` (issue: replay).

Layer 4: thin click commands registered on :data:`proxy.cli.main`; the work is in
``proxy/replay*.py``.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import click

from .cli import CONTEXT, _db, _dump, db_option, handle_errors, json_option, main

__all__ = ["replay"]

_MATCH = click.Choice(["strict", "lenient"])


class _DashDashCommand(click.Command):
    """A command whose words after the first ``--`` are kept apart, untouched by click
    (``ctx.meta["after_dash_dash"]``), so ``replay agent -- my-agent`` cannot mistake the
    agent command for a capture."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            i = args.index("--")
            args, ctx.meta["after_dash_dash"] = args[:i], args[i + 1 :]
        else:
            ctx.meta["after_dash_dash"] = None
        return super().parse_args(ctx, args)


@main.group(context_settings=CONTEXT)
def replay() -> None:
    """Replay a capture: stand in for the agent, or for the client.

    \b
    Debug an editor against a recorded agent (no LLM, deterministic):
        acp-proxy replay agent 3 -- my-agent
    Re-drive a real agent with the recorded client and diff the outcome:
        acp-proxy replay client 3 -- my-agent --flag
    """


@replay.command("agent", cls=_DashDashCommand, context_settings=CONTEXT)
@db_option
@click.argument("capture", required=False)
@click.option("--session", "session", metavar="ID", help="Replay only this ACP session.")
@click.option("--match", "match", type=_MATCH, default="lenient", show_default=True,
              help="strict: the client's messages must come in the recorded order.")  # fmt: skip
@click.option(
    "--timing",
    default="fast",
    show_default=True,
    metavar="fast|original|xN",
    help="Answer at once, with the recorded gaps, or N times faster than recorded.",
)
@click.option(
    "--listen",
    metavar="HOST:PORT",
    help="Serve WebSocket clients at ws://HOST:PORT/acp (loopback only) instead of stdio.",
)
@click.option("--keep-serving", is_flag=True, help="With --listen: serve one client after another.")
@handle_errors
def replay_agent(
    db: Path | None,
    capture: str | None,
    session: str | None,
    match: str,
    timing: str,
    listen: str | None,
    keep_serving: bool,
) -> None:
    """Stand in for the agent: answer a live client from a recording.

    Use it as the agent command of an editor; a trailing `-- CMD...` is accepted and
    ignored, so `acp-proxy record -- my-agent` becomes `acp-proxy replay agent -- my-agent`.
    Requests are matched by method and params (ids, _meta, session ids, timestamps and the
    workspace path may differ); a request with no recorded answer gets a JSON-RPC error
    naming the closest recorded one. Exits 0 when the replay ran clean, 1 otherwise.
    CAPTURE is a capture id (default: the latest), a uid prefix, or a jsonl export file.

    \b
    Example (an editor's agent command):
        acp-proxy replay agent --db ~/acp.sqlite 12 -- my-agent --flag
    """
    from .replay import Timing, load_recording, parse_listen, serve_stdio, serve_websocket
    from .replay_agent import MatchMode

    pace = Timing.parse(timing)
    recording = load_recording(capture, _db(db), session=session)
    mode = MatchMode(match)
    try:
        if listen is not None:
            host, port = parse_listen(listen)
            ok = asyncio.run(
                serve_websocket(
                    recording, host, port, mode=mode, timing=pace, keep_serving=keep_serving
                )
            )
        else:
            ok = asyncio.run(serve_stdio(recording, mode=mode, timing=pace))
    except KeyboardInterrupt:
        sys.stderr.flush()
        os._exit(130)
    sys.stderr.flush()
    sys.stdout.flush()
    os._exit(0 if ok else 1)


@replay.command("client", cls=_DashDashCommand, context_settings=CONTEXT)
@db_option
@json_option
@click.argument("capture", required=False)
@click.option(
    "--ignore",
    "ignore",
    multiple=True,
    metavar="PATH",
    help="A JSON path in messages to leave out when matching the agent's requests and "
    "comparing the runs (repeatable), e.g. params.command or params.update.title; "
    "* matches any key or index.",
)
@click.option(
    "--timeout",
    type=float,
    default=30.0,
    show_default=True,
    help="Seconds to wait for the agent to reach each recorded point.",
)
@click.option(
    "--cwd",
    "cwd",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="Run the agent here, and put this directory where the recording's workspace was.",
)
@handle_errors
def replay_client(
    db: Path | None,
    as_json: bool,
    capture: str | None,
    ignore: tuple[str, ...],
    timeout: float,
    cwd: Path | None,
) -> None:
    """Stand in for the client: drive a real agent with a recording and compare the runs.

    The recorded client's requests and notifications are sent at their recorded points,
    the agent's requests (permission, fs, terminal) are answered from the recording, and
    the new run is recorded as a new capture. Then both runs are compared: messages and
    update kinds per turn, tool calls and their statuses, stop reasons, errors, files
    written. Exits 0 when they agree, 1 when they diverge (a CI gate).
    CAPTURE is a capture id (default: the latest), a uid prefix, or a jsonl export file.

    \b
    Example (in CI, against a checked-in recording):
        acp-proxy replay client recordings/fix-bug.jsonl --db /tmp/ci.sqlite -- my-agent
    """
    from .recorder import tune_relay_process
    from .replay import load_recording
    from .replay_run import replay_client as run

    tune_relay_process()

    argv = click.get_current_context().meta.get("after_dash_dash") or []
    if not argv:
        raise click.UsageError("no agent command given (usage: acp-proxy replay client -- CMD ...)")
    if timeout <= 0:
        raise click.UsageError("--timeout must be more than zero seconds")
    path = _db(db)
    recording = load_recording(capture, path)
    outcome = run(
        recording,
        argv,
        path,
        ignore=ignore,
        timeout=timeout,
        cwd=str(cwd.resolve()) if cwd is not None else None,
    )
    if as_json:
        _dump(outcome.to_json())
    else:
        for line in outcome.report():
            click.echo(line)
    sys.stdout.flush()
    raise SystemExit(1 if outcome.diverged else 0)

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

from .cli import CONTEXT, _db, db_option, handle_errors, json_option, main

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
    if listen is not None:
        host, port = parse_listen(listen)
        ok = asyncio.run(
            serve_websocket(
                recording, host, port, mode=mode, timing=pace, keep_serving=keep_serving
            )
        )
    else:
        ok = asyncio.run(serve_stdio(recording, mode=mode, timing=pace))
    sys.stderr.flush()
    sys.stdout.flush()
    os._exit(0 if ok else 1)


@replay.command(
    "client",
    context_settings={**CONTEXT, "ignore_unknown_options": True, "allow_interspersed_args": False},
)
@db_option
@json_option
@click.argument("capture", required=False)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@handle_errors
def replay_client(
    db: Path | None, as_json: bool, capture: str | None, command: tuple[str, ...]
) -> None:
    """Stand in for the client: drive a real agent with a recording and diff the runs."""
    raise click.UsageError("not available yet")

"""``acp-proxy replay agent|client``: stand in for one side from a recording.

Thin click commands; the work is in :mod:`acp_proxy.replay`.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from acp_proxy.cli.common import (
    CONTEXT,
    DashDashCommand,
    Seconds,
    after_dash_dash,
    db_path,
    dump_json,
    echo,
    expand_path,
)
from acp_proxy.cli.exits import relaying
from acp_proxy.cli.listening import allow_host_option, timeout_options, timeouts_of
from acp_proxy.cli.options import db_option, group_db_option, json_option
from acp_proxy.errors import UsageError

__all__ = ["replay"]

_MATCH = click.Choice(["strict", "lenient"])


@click.group(context_settings=CONTEXT)
@group_db_option
def replay() -> None:
    """Replay a capture: stand in for the agent, or for the client.

    \b
    Debug an editor against a recorded agent (no LLM, deterministic):
        acp-proxy replay agent 3 -- my-agent
    Re-drive a real agent with the recorded client and diff the outcome:
        acp-proxy replay client 3 -- my-agent --flag
    """


@replay.command("agent", cls=DashDashCommand, context_settings=CONTEXT)
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
    "--max-gap",
    type=float,
    default=5.0,
    show_default=True,
    metavar="SECONDS",
    help="With --timing original or xN: wait at most this long for any one recorded gap "
    "(a note on stderr says when a gap was cut).",
)
@click.option(
    "--listen",
    metavar="HOST:PORT",
    help="Serve clients at HOST:PORT/acp, over WebSocket and Streamable HTTP (loopback only), "
    "instead of stdio.",
)
@click.option("--keep-serving", is_flag=True, help="With --listen: serve one client after another.")
@allow_host_option
@timeout_options
def replay_agent(
    db: Path | None,
    capture: str | None,
    session: str | None,
    match: str,
    timing: str,
    max_gap: float,
    listen: str | None,
    keep_serving: bool,
    allow_hosts: tuple[str, ...],
    head_timeout: float,
    body_timeout: float,
    idle_timeout: float,
) -> int:
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
    from acp_proxy.replay.core.agent import MatchMode
    from acp_proxy.replay.listen import Limits, serve_listen
    from acp_proxy.replay.serve import Timing, load_recording, parse_listen, serve_stdio

    if keep_serving and listen is None:
        raise UsageError("--keep-serving goes with --listen")
    pace = Timing.parse(timing, max_gap)
    address = parse_listen(listen) if listen is not None else None
    recording = load_recording(capture, db_path(db), session=session)
    mode = MatchMode(match)
    relaying()
    if address is not None:
        limits = Limits(timeouts_of(head_timeout, body_timeout, idle_timeout),
                        frozenset(allow_hosts))  # fmt: skip
        try:
            ok = asyncio.run(
                serve_listen(
                    recording,
                    *address,
                    mode=mode,
                    timing=pace,
                    keep_serving=keep_serving,
                    limits=limits,
                )
            )
        except OSError as e:
            raise UsageError(f"cannot listen on {listen}: {e.strerror or e}") from e
    else:
        ok = asyncio.run(serve_stdio(recording, mode=mode, timing=pace))
    return 0 if ok else 1


@replay.command("client", cls=DashDashCommand, context_settings=CONTEXT)
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
    type=Seconds(),
    default=30.0,
    show_default=True,
    help="Seconds to wait for the agent to reach each recorded point.",
)
@click.option(
    "--cwd",
    "cwd",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run the agent here, and put this directory where the recording's workspace was.",
)
def replay_client(
    db: Path | None,
    as_json: bool,
    capture: str | None,
    ignore: tuple[str, ...],
    timeout: float,
    cwd: Path | None,
) -> int:
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
    from acp_proxy.relay import tune_relay_process
    from acp_proxy.replay.run import replay_client as run
    from acp_proxy.replay.serve import load_recording

    tune_relay_process()

    argv = after_dash_dash() or []
    if not argv:
        raise UsageError("no agent command given (usage: acp-proxy replay client -- CMD ...)")
    if cwd is not None:
        cwd = expand_path(cwd)
        if not cwd.is_dir():
            raise UsageError(f"--cwd {cwd}: no such directory")
    path = db_path(db)
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
        dump_json(outcome.to_json())
    else:
        for line in outcome.report():
            echo(line)
    return 1 if outcome.diverged else 0

"""``acp-proxy record``: wrap a stdio agent (or reach a remote one), relay and record."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import click

from acp_proxy.cli.common import CONTEXT, agent_command, db_path
from acp_proxy.cli.exits import relaying
from acp_proxy.cli.options import db_option, grace_option
from acp_proxy.cli.otel_live import live_recorder_env, otel_options
from acp_proxy.errors import UsageError

__all__ = ["record"]


@click.command(
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
    "--keep-secrets",
    is_flag=True,
    help="With --upstream: store every header and query parameter value of the upgrade as "
    "sent, not redacted.",
)
@grace_option("Seconds to wait after the client closes stdin before terminating the agent.")
@click.option(
    "--check",
    "live_check",
    is_flag=True,
    help="Print ACP conformance findings (acp-proxy check) on stderr as they happen.",
)
@otel_options
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def record(
    db: Path | None,
    label: str | None,
    upstream: str | None,
    headers: tuple[str, ...],
    keep_secrets: bool,
    grace: float,
    live_check: bool,
    otlp_endpoint: str | None,
    otel_content: bool,
    command: tuple[str, ...],
) -> int:
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
    from acp_proxy.record.link import RecorderLink
    from acp_proxy.relay import tune_relay_process
    from acp_proxy.relay.stdio import record_stdio

    argv = agent_command(command)
    recorder_env = live_recorder_env(otlp_endpoint, otel_content)
    db = db_path(db, relaying=True)
    if upstream is not None:
        if argv:
            raise UsageError("give either --upstream URL or an agent command, not both")
        from acp_proxy.cli.ws import record_upstream

        relaying()
        voice = _LiveCheck(db_path(db)) if live_check else None
        try:
            return record_upstream(
                db,
                upstream,
                label=label,
                headers=headers,
                keep_secrets=keep_secrets,
                recorder_env=recorder_env,
            )
        finally:
            if voice is not None:
                voice.close()
    if headers:
        raise UsageError("--header goes with --upstream")
    if keep_secrets:
        raise UsageError("--keep-secrets goes with --upstream")
    if not argv:
        raise UsageError("no agent command given (usage: acp-proxy record -- CMD ...)")
    relaying()
    tune_relay_process()
    voice = _LiveCheck(db) if live_check else None
    writer = RecorderLink(db, recorder_env=recorder_env)
    try:
        return record_stdio(argv, writer, label=label, grace=grace)
    finally:
        writer.close()
        if voice is not None:
            voice.close()


class _LiveCheck:
    """The process of ``record --check`` (:mod:`acp_proxy.check.live`): it reads what the
    recorder stored, never our stdin or stdout, and speaks through our stderr only while we
    run. At the end we wait a moment for what only the end of a capture shows, then let it
    go: the editor's stderr is never held for it."""

    _FINAL_WORDS_S = 1.5

    def __init__(self, db: Path) -> None:
        import subprocess

        from acp_proxy.record.voice import RelayedStderr

        self.voice = RelayedStderr()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "acp_proxy.check.live", str(db), str(os.getpid())],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.voice.fd,
            start_new_session=True,
        )

    def close(self) -> None:
        import subprocess

        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(self._FINAL_WORDS_S)
        self.voice.close()

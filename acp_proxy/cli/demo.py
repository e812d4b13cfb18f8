"""``acp-proxy demo``: the bundled demo session, recorded and shown."""

from __future__ import annotations

from pathlib import Path

import click

from acp_proxy.cli.common import CONTEXT, db_path, echo
from acp_proxy.cli.options import db_option
from acp_proxy.errors import UsageError
from acp_proxy.store.reader import Store

__all__ = ["demo"]


@click.command(context_settings=CONTEXT)
@db_option
@click.option("--keep-going", is_flag=True, hidden=True)
def demo(db: Path | None, keep_going: bool) -> None:
    """Run a bundled demo client and agent through the proxy and show the recording.

    No network and no keys: a realistic ACP v1 session (prompts, streamed chunks, a plan,
    tool calls with diff and terminal content, a permission prompt, file reads and writes,
    a terminal, custom methods, _meta, cancellation) is recorded into the database.

    \b
    Example:
        acp-proxy demo --db /tmp/demo.sqlite
    """
    from acp_proxy.demo import run_demo

    path = db_path(db)
    capture_id = run_demo(path)
    store = Store(path)
    from acp_proxy.text.captures import capture_header
    from acp_proxy.text.timeline import frame_line

    c = store.capture(capture_id)
    for line in capture_header(c, store.events(c["id"])):
        echo(line)
    for f in store.frames(c["id"]):
        echo(frame_line(f))
    echo("")
    echo(f"recorded capture {c['id']} into {path}")
    echo(f"next: acp-proxy show {c['id']} --db {path}   |   acp-proxy captures --db {path}")
    if c.get("exit_code") not in (0, None):
        raise UsageError(f"demo agent exited with {c['exit_code']}")

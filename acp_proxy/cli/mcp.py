"""``acp-proxy mcp``: an MCP server over stdio that lets an agent look into recordings."""

from __future__ import annotations

from pathlib import Path

import click

from acp_proxy.cli.common import CONTEXT, db_path
from acp_proxy.cli.options import db_option
from acp_proxy.errors import UsageError

__all__ = ["mcp"]


@click.command(context_settings=CONTEXT)
@db_option
@click.option(
    "--no-redact",
    is_flag=True,
    help="Answer with credentials as recorded (by default they are redacted as share does).",
)
def mcp(db: Path | None, no_redact: bool) -> None:
    """Serve the recordings to an MCP client (an agent) over stdio: read-only tools to list
    captures, search, read frames, turns, tool calls, diffs, terminals, stderr and events,
    and run check. Needs the mcp extra: pip install 'acp-proxy[mcp]'.

    \b
    Example (an MCP client's server settings):
        {"command": "acp-proxy", "args": ["mcp", "--db", "/home/me/acp.sqlite"]}
    """
    try:
        import mcp as _sdk  # noqa: F401 - the extra: said plainly when it is missing

        from acp_proxy.mcpserver.server import run
    except ImportError as e:
        raise UsageError(
            f"the MCP server needs the mcp extra: pip install 'acp-proxy[mcp]' ({e})"
        ) from e
    path = db_path(db)
    if not path.is_file():
        raise UsageError(f"no recordings database at {path} (record something first)")
    run(path, redact=not no_redact)

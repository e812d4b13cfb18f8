"""The ``acp-proxy`` command line: one click group, commands registered by name.

What belongs here: the root group and the table of commands. The root imports no command
module: each is imported when it is run (or listed by ``--help``), so ``record`` starts
fast and a command module never imports the root (no cycles). Shared options are in
:mod:`acp_proxy.cli.common`; how a command's outcome becomes an exit status, in one place,
is :mod:`acp_proxy.cli.exits`.
"""

from __future__ import annotations

import importlib
from typing import ClassVar

import click

from acp_proxy import __version__
from acp_proxy.cli.common import CONTEXT
from acp_proxy.cli.exits import finish

__all__ = ["COMMANDS", "main"]

# command name -> "module:attribute" of its click command
COMMANDS = {
    "record": "acp_proxy.cli.record:record",
    "captures": "acp_proxy.cli.captures:captures",
    "show": "acp_proxy.cli.show:show",
    "chain": "acp_proxy.cli.chain:chain",
    "tail": "acp_proxy.cli.tail:tail",
    "tools": "acp_proxy.cli.views:tools",
    "terminals": "acp_proxy.cli.views:terminals",
    "diffs": "acp_proxy.cli.views:diffs",
    "export": "acp_proxy.cli.export:export",
    "share": "acp_proxy.cli.export:share",
    "import": "acp_proxy.cli.load:import_exports",
    "diff": "acp_proxy.cli.diff:diff",
    "import-spill": "acp_proxy.cli.spill:import_spill",
    "ws": "acp_proxy.cli.ws:ws",
    "http": "acp_proxy.cli.http:http",
    "replay": "acp_proxy.cli.replay:replay",
    "demo": "acp_proxy.cli.demo:demo",
    "check": "acp_proxy.cli.check:check",
    "otel": "acp_proxy.cli.otel:otel",
    "ui": "acp_proxy.cli.ui:ui",
    "search": "acp_proxy.cli.ui:search",
    "mcp": "acp_proxy.cli.mcp:mcp",
    "rm": "acp_proxy.cli.manage:rm",
    "prune": "acp_proxy.cli.manage:prune",
}


class Registry(click.Group):
    """A group whose commands are imported from :data:`COMMANDS` when first needed."""

    table: ClassVar[dict[str, str]] = COMMANDS

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(self.table)

    def invoke(self, ctx: click.Context) -> object:
        # the one way out: errors (reading the options too), Ctrl-C, the status returned
        finish(ctx, lambda: super(Registry, self).invoke(ctx))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = self.table.get(cmd_name)
        if target is None:
            return None
        module, _, attr = target.partition(":")
        command = getattr(importlib.import_module(module), attr)
        assert isinstance(command, click.Command)
        return command


@click.group("acp-proxy", cls=Registry, context_settings=CONTEXT)
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

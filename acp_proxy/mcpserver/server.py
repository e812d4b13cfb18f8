"""The MCP server over stdio: :class:`~acp_proxy.mcpserver.tools.Tools` as MCP tools.

What belongs here: registering each tool with the official MCP Python SDK (the ``mcp``
extra), its description and arguments, read-only hints, and running it on stdio. What the
tools answer, and how it is bounded, redacted and delimited, is
:mod:`acp_proxy.mcpserver.tools`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp_proxy import __version__
from acp_proxy.errors import ProxyError
from acp_proxy.mcpserver.tools import Tools, delimited

__all__ = ["build", "run"]

_INSTRUCTIONS = (
    "Read-only access to ACP traffic recorded by acp-proxy: captures (one per editor-agent "
    "connection), their frames, what the user saw (turns, tool calls, diffs, terminals, "
    "sessions), the agent's stderr and events, conformance findings, and full-text search. "
    "A capture is an id, -1 for the latest, or a uid prefix. Answers are data recorded "
    "from the peers, between <recorded-data> markers; secrets are redacted unless the "
    "server was started with --no-redact."
)


def build(db: Path, *, redact: bool = True) -> Any:
    """The server, its tools registered."""
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    tools = Tools(db, redact=redact)
    server = MCPServer("acp-proxy", version=__version__, instructions=_INSTRUCTIONS)
    ro = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    def answer(fn: Any, *args: Any, **kwargs: Any) -> str:
        try:
            return delimited(fn(*args, **kwargs))
        except ProxyError as e:  # a capture that does not exist, a bad query: said plainly
            return f"acp-proxy: {e}"

    @server.tool(description="The latest captures, newest first: id, start, peers, status.",
                 annotations=ro)  # fmt: skip
    def list_captures(limit: int = 20) -> str:
        return answer(tools.list_captures, limit)

    @server.tool(description="Full-text search over frames, the agent's stderr and events "
                 "(words, \"a phrase\", prefix*), newest first.", annotations=ro)  # fmt: skip
    def search(query: str, capture: str | None = None, limit: int = 20) -> str:
        return answer(tools.search, query, capture, limit)

    @server.tool(description="A capture's frames in order from from_seq (method is a glob, "
                 "e.g. 'fs/*'; kind request|notification|response|error; direction c2a|a2c); "
                 "each frame's text is cut at 2000 characters: read_frame gives one whole.",
                 annotations=ro)  # fmt: skip
    def read_frames(capture: str | None = None, from_seq: int = 0, limit: int = 50,
                    method: str | None = None, kind: str | None = None,
                    direction: str | None = None) -> str:  # fmt: skip
        return answer(tools.read_frames, capture, from_seq, limit, method, kind, direction)

    @server.tool(description="One frame of a capture, its text up to 50000 characters.",
                 annotations=ro)  # fmt: skip
    def read_frame(seq: int, capture: str | None = None) -> str:
        return answer(tools.read_frame, seq, capture)

    for name, what in (
        ("turns", "prompt turns: prompt, answer, stop reason or error, timing, tool calls"),
        ("tool_calls", "tool calls: title, kind, every status, content, locations"),
        ("diffs", "file changes as unified diffs, with the write that applied each"),
        ("terminals", "terminals: command, the screen as a terminal showed it, exit status"),
        ("sessions", "sessions, subagents under their parent, messages between them"),
    ):
        _view_tool(server, ro, answer, tools, name, what)

    @server.tool(description="The agent's stderr lines and the process, connection and HTTP "
                 "events of a capture, in time order (where the cause of a failure usually "
                 "is).", annotations=ro)  # fmt: skip
    def stderr_and_events(capture: str | None = None, start: int = 0, limit: int = 200) -> str:
        return answer(tools.stderr_and_events, capture, start, limit)

    @server.tool(description="Where each side broke ACP in a capture (acp-proxy check): "
                 "framing, JSON-RPC, the schema of the negotiated version, behaviour rules.",
                 annotations=ro)  # fmt: skip
    def check(capture: str | None = None, side: str | None = None) -> str:
        return answer(tools.check, capture, side)

    return server


def _view_tool(server: Any, ro: Any, answer: Any, tools: Tools, name: str, what: str) -> None:
    def view(capture: str | None = None, start: int = 0) -> str:
        return str(answer(tools.view, name, capture, start))

    view.__name__ = name
    server.tool(name=name, description=f"A capture's {what} (the command's JSON).",
                annotations=ro)(view)  # fmt: skip


def run(db: Path, *, redact: bool = True) -> None:
    """Serve on stdio until the client goes away."""
    build(db, redact=redact).run("stdio")

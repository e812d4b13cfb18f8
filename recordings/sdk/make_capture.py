"""Record ``recordings/sdk-v1.jsonl``: the official Python SDK as both peers, via the proxy.

Usage (from the repository root)::

    python recordings/sdk/make_capture.py

The client (``acp.Client``) serves real files from a temporary project and runs terminal
commands for real; the agent is ``agent.py`` beside this file, wrapped by
``acp-proxy record``. The capture is exported with ``acp-proxy export --format jsonl``.
"""

import asyncio
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, Client, spawn_agent_process, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    FileSystemCapabilities,
    Implementation,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "sdk-v1.jsonl"


class SampleClient(Client):
    def __init__(self) -> None:
        self.terminals: dict[str, asyncio.subprocess.Process] = {}
        self.output: dict[str, bytes] = {}

    async def request_permission(self, session_id: str, tool_call: Any, options: Any, **kw: Any):
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id="once")
        )

    async def read_text_file(self, session_id: str, path: str, **kw: Any):
        return ReadTextFileResponse(content=Path(path).read_text())

    async def write_text_file(self, session_id: str, path: str, content: str, **kw: Any):
        Path(path).write_text(content)
        return WriteTextFileResponse()

    async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
        return None

    async def create_terminal(
        self, session_id: str, command: str, args=None, env=None, cwd=None, **kw: Any
    ):
        environ = {"PATH": "/usr/bin:/bin", **{e.name: e.value for e in env or []}}
        proc = await asyncio.create_subprocess_exec(
            command,
            *(args or []),
            cwd=cwd,
            env=environ,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        tid = f"term_{len(self.terminals) + 1}"
        self.terminals[tid] = proc
        return CreateTerminalResponse(terminal_id=tid)

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kw: Any):
        proc = self.terminals[terminal_id]
        assert proc.stdout is not None
        self.output[terminal_id] = await proc.stdout.read()
        code = await proc.wait()
        return WaitForTerminalExitResponse(exit_code=code)

    async def terminal_output(self, session_id: str, terminal_id: str, **kw: Any):
        proc = self.terminals[terminal_id]
        return TerminalOutputResponse(
            output=self.output.get(terminal_id, b"").decode(),
            truncated=False,
            exit_status=TerminalExitStatus(exit_code=proc.returncode),
        )

    async def release_terminal(self, session_id: str, terminal_id: str, **kw: Any):
        return ReleaseTerminalResponse()


async def main() -> None:
    with tempfile.TemporaryDirectory(prefix="acp-sdk-sample-") as d:
        project = Path(d) / "project"
        project.mkdir()
        (project / "app.py").write_text("def greet():\n    return 'Helo'\n")
        db = Path(d) / "rec.sqlite"
        proxy = [sys.executable, "-m", "acp_proxy", "record", "--db", str(db), "--"]
        agent = [sys.executable, str(HERE / "agent.py")]
        client = SampleClient()
        async with spawn_agent_process(client, *proxy, *agent) as (conn, _proc):
            await conn.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(
                    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True),
                    terminal=True,
                ),
                client_info=Implementation(name="sdk-sample-client", version="0.1.0"),
            )
            session = await conn.new_session(cwd=str(project), mcp_servers=[])
            await conn.prompt(
                session_id=session.session_id, prompt=[text_block("fix the greeting")]
            )
        subprocess.run(
            [sys.executable, "-m", "acp_proxy", "export", "--db", str(db), "-o", str(OUT)],
            check=True,
        )


if __name__ == "__main__":
    asyncio.run(main())

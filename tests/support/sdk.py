"""A client written on the official Python SDK, and one session driven with it."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, Client, spawn_agent_process, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    FileSystemCapabilities,
    Implementation,
    KillTerminalResponse,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
)


class _Terminal:
    """A real process run for the agent, its output (stdout and stderr) kept as it comes."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.output = bytearray()
        self.reading = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while chunk := await self.proc.stdout.read(65536):
            self.output += chunk

    async def exited(self) -> int:
        code = await self.proc.wait()
        await self.reading
        return code


class RecordingClient(Client):
    """The client side: grants every permission, reads files from disk, runs terminals as
    real processes, and keeps every session update it was sent."""

    def __init__(self) -> None:
        self.updates: list[dict[str, Any]] = []
        self.terminals: dict[str, _Terminal] = {}
        self._ids = itertools.count(1)

    async def create_terminal(
        self, session_id: str, command: str, args: list[str] | None = None, **kwargs: Any
    ) -> CreateTerminalResponse:
        proc = await asyncio.create_subprocess_exec(
            command,
            *(args or []),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        tid = f"term-{next(self._ids)}"
        self.terminals[tid] = _Terminal(proc)
        return CreateTerminalResponse(terminal_id=tid)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        t = self.terminals[terminal_id]
        code = t.proc.returncode
        return TerminalOutputResponse(
            output=t.output.decode(errors="replace"),
            truncated=False,
            exit_status=None if code is None else TerminalExitStatus(exit_code=code),
        )

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        return WaitForTerminalExitResponse(exit_code=await self.terminals[terminal_id].exited())

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> KillTerminalResponse:
        t = self.terminals[terminal_id]
        if t.proc.returncode is None:
            t.proc.kill()
        return KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse:
        t = self.terminals.pop(terminal_id)
        if t.proc.returncode is None:
            t.proc.kill()
        await t.exited()
        return ReleaseTerminalResponse()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: Any, **kwargs: Any
    ) -> RequestPermissionResponse:
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id="ok"))

    async def read_text_file(
        self, session_id: str, path: str, **kwargs: Any
    ) -> ReadTextFileResponse:
        return ReadTextFileResponse(content=Path(path).read_text())

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update.model_dump(mode="json", by_alias=True, exclude_none=True))


async def sdk_session(command: list[str], cwd: Path) -> tuple[list[dict[str, Any]], list[str], str]:
    client = RecordingClient()
    async with spawn_agent_process(client, command[0], *command[1:]) as (conn, _proc):
        init = await conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True)),
            client_info=Implementation(name="sdk-test-client", version="0.1.0"),
        )
        session = await conn.new_session(cwd=str(cwd), mcp_servers=[])
        stops = []
        for text in ("hello", "héllo wörld ✔"):
            r = await conn.prompt(session_id=session.session_id, prompt=[text_block(text)])
            stops.append(r.stop_reason)
        assert init.agent_info is not None
        return client.updates, stops, init.agent_info.name

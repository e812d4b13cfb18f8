"""A client written on the official Python SDK, and one session driven with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, Client, spawn_agent_process, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    FileSystemCapabilities,
    Implementation,
    ReadTextFileResponse,
    RequestPermissionResponse,
)


class RecordingClient(Client):
    def __init__(self) -> None:
        self.updates: list[dict[str, Any]] = []

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

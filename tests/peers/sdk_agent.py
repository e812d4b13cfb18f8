"""An ACP agent built on the official Python SDK (``agent-client-protocol``).

On each prompt it echoes the text, opens a tool call, asks permission, reads a file through
the client, and finishes the tool call: a third party's implementation of the agent side.
"""

import asyncio
from typing import Any

from acp import (
    Agent,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    run_agent,
    start_read_tool_call,
    text_block,
    update_agent_message,
    update_tool_call,
)
from acp.interfaces import Client
from acp.schema import AgentCapabilities, Implementation, PermissionOption


class SdkAgent(Agent):
    _conn: Client

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=protocol_version,
            agent_capabilities=AgentCapabilities(load_session=False),
            agent_info=Implementation(name="sdk-test-agent", version="0.1.0"),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        self.cwd = cwd
        return NewSessionResponse(session_id="sdk-session-1")

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        for block in prompt:
            text = getattr(block, "text", "")
            chunk = update_agent_message(text_block(f"echo: {text}"))
            chunk.field_meta = {"echo": True}
            await self._conn.session_update(session_id=session_id, update=chunk)
        path = f"{self.cwd}/notes.txt"
        await self._conn.session_update(
            session_id=session_id,
            update=start_read_tool_call("call_1", "Read notes", path),
        )
        permission = await self._conn.request_permission(
            session_id=session_id,
            tool_call=update_tool_call("call_1", title="Read notes"),
            options=[
                PermissionOption(option_id="ok", name="Allow", kind="allow_once"),
                PermissionOption(option_id="no", name="Deny", kind="reject_once"),
            ],
        )
        content = ""
        if getattr(permission.outcome, "option_id", None) == "ok":
            content = (await self._conn.read_text_file(session_id=session_id, path=path)).content
        await self._conn.session_update(
            session_id=session_id,
            update=update_tool_call(
                "call_1", status="completed", raw_output={"chars": len(content)}
            ),
        )
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(run_agent(SdkAgent()))

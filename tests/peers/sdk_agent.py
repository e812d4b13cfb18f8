"""An ACP agent built on the official Python SDK (``agent-client-protocol``).

On each prompt it echoes the text, opens a tool call, asks permission, reads a file through
the client, and finishes the tool call: a third party's implementation of the agent side.
A prompt that says "terminal" runs a command in a terminal of the client's instead; one that
says "wait" waits until the client cancels it, and ends ``cancelled``.
"""

import asyncio
import sys
from typing import Any

from acp import (
    Agent,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    run_agent,
    start_read_tool_call,
    start_tool_call,
    text_block,
    tool_terminal_ref,
    update_agent_message,
    update_tool_call,
)
from acp.interfaces import Client
from acp.schema import AgentCapabilities, Implementation, PermissionOption


class SdkAgent(Agent):
    _conn: Client

    def on_connect(self, conn: Client) -> None:
        self._conn = conn
        self._cancelled: dict[str, asyncio.Event] = {}

    def _cancel_event(self, session_id: str) -> asyncio.Event:
        return self._cancelled.setdefault(session_id, asyncio.Event())

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self._cancel_event(session_id).set()

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
        said = " ".join(getattr(block, "text", "") for block in prompt)
        if "terminal" in said:
            return await self._terminal_turn(session_id)
        if "wait" in said:
            await self._cancel_event(session_id).wait()
            return PromptResponse(stop_reason="cancelled")
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

    async def _terminal_turn(self, session_id: str) -> PromptResponse:
        await self._conn.session_update(
            session_id=session_id,
            update=start_tool_call("call_term", "Say hello", kind="execute", status="in_progress"),
        )
        terminal = await self._conn.create_terminal(
            session_id=session_id,
            command=sys.executable,
            args=["-c", "print('hello from a terminal')"],
        )
        tid = terminal.terminal_id
        await self._conn.session_update(
            session_id=session_id,
            update=update_tool_call("call_term", content=[tool_terminal_ref(tid)]),
        )
        exited = await self._conn.wait_for_terminal_exit(session_id=session_id, terminal_id=tid)
        output = await self._conn.terminal_output(session_id=session_id, terminal_id=tid)
        await self._conn.release_terminal(session_id=session_id, terminal_id=tid)
        await self._conn.session_update(
            session_id=session_id,
            update=update_tool_call(
                "call_term",
                status="completed",
                raw_output={"exit": exited.exit_code, "output": output.output},
            ),
        )
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(run_agent(SdkAgent()))

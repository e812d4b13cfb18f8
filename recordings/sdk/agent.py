"""A small ACP v1 agent built on the official Python SDK (``agent-client-protocol``).

It makes the sample capture ``recordings/sdk-v1.jsonl`` (see ``make_capture.py``): on a
prompt it plans, reads a file through the client, edits it (diff content and
``fs/write_text_file``), creates a new file, asks permission, and runs a command in a
client terminal (``terminal/create``, ``wait_for_exit``, ``output``, ``release``) whose tool
call shows the terminal. No model, no network.
"""

import asyncio
from typing import Any

from acp import (
    Agent,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    plan_entry,
    run_agent,
    start_edit_tool_call,
    start_read_tool_call,
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    tool_terminal_ref,
    update_agent_message,
    update_plan,
    update_tool_call,
)
from acp.interfaces import Client
from acp.schema import AgentCapabilities, EnvVariable, Implementation, PermissionOption

SCRIPT = (
    "printf 'building \\033[33m...\\033[0m'; sleep 0.05; "
    "printf '\\r\\033[2Kbuilt \\342\\234\\224\\n'; printf 'test 1/2\\rtest 2/2\\n'; "
    "printf '\\033[31m1 failed\\033[0m\\n'; exit 2"
)


class SampleAgent(Agent):
    _conn: Client

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=protocol_version,
            agent_capabilities=AgentCapabilities(load_session=False),
            agent_info=Implementation(name="sdk-sample-agent", version="0.1.0"),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        self.cwd = cwd
        return NewSessionResponse(session_id="sdk-sample-1")

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        say = self._conn.session_update
        await say(session_id, update_agent_message(text_block("Looking at the project.")))
        entries = [
            plan_entry("Read app.py", priority="high", status="in_progress"),
            plan_entry("Fix the greeting", priority="high", status="pending"),
            plan_entry("Run the tests", priority="medium", status="pending"),
        ]
        await say(session_id, update_plan(entries))

        path = f"{self.cwd}/app.py"
        await say(session_id, start_read_tool_call("read_1", "Read app.py", path))
        old = (await self._conn.read_text_file(session_id=session_id, path=path)).content
        await say(
            session_id,
            update_tool_call("read_1", status="completed", content=[tool_content(text_block(old))]),
        )

        new = old.replace("Helo", "Hello")
        edit = start_edit_tool_call("edit_1", "Fix the greeting", path, new)
        await say(session_id, edit)
        await say(
            session_id,
            update_tool_call(
                "edit_1", status="in_progress", content=[tool_diff_content(path, new, old)]
            ),
        )
        await self._conn.write_text_file(session_id=session_id, path=path, content=new)
        await say(session_id, update_tool_call("edit_1", status="completed"))

        test_path = f"{self.cwd}/test_app.py"
        test_text = "from app import greet\n\n\ndef test_greet():\n    assert greet() == 'Hello'\n"
        await say(
            session_id,
            start_tool_call(
                "edit_2",
                "Add a test",
                kind="edit",
                status="in_progress",
                content=[tool_diff_content(test_path, test_text)],
            ),
        )
        await self._conn.write_text_file(session_id=session_id, path=test_path, content=test_text)
        await say(session_id, update_tool_call("edit_2", status="completed"))
        entries[0].status = "completed"
        entries[1].status = "completed"
        entries[2].status = "in_progress"
        await say(session_id, update_plan(entries))

        await say(
            session_id,
            start_tool_call(
                "run_1", "Run the tests", kind="execute", status="pending", raw_input={"sh": SCRIPT}
            ),
        )
        permission = await self._conn.request_permission(
            session_id=session_id,
            tool_call=update_tool_call("run_1", title="Run the tests", kind="execute"),
            options=[
                PermissionOption(option_id="once", name="Allow once", kind="allow_once"),
                PermissionOption(option_id="never", name="Reject", kind="reject_always"),
            ],
        )
        if getattr(permission.outcome, "option_id", None) != "once":
            await say(session_id, update_tool_call("run_1", status="failed"))
            return PromptResponse(stop_reason="end_turn")
        term = await self._conn.create_terminal(
            session_id=session_id,
            command="sh",
            args=["-c", SCRIPT],
            cwd=self.cwd,
            env=[EnvVariable(name="LC_ALL", value="C.UTF-8")],
            output_byte_limit=4096,
        )
        await say(
            session_id,
            update_tool_call(
                "run_1", status="in_progress", content=[tool_terminal_ref(term.terminal_id)]
            ),
        )
        status = await self._conn.wait_for_terminal_exit(
            session_id=session_id, terminal_id=term.terminal_id
        )
        out = await self._conn.terminal_output(session_id=session_id, terminal_id=term.terminal_id)
        await self._conn.release_terminal(session_id=session_id, terminal_id=term.terminal_id)
        failed = status.exit_code != 0
        await say(
            session_id,
            update_tool_call(
                "run_1",
                status="failed" if failed else "completed",
                raw_output={"exitCode": status.exit_code, "bytes": len(out.output.encode())},
            ),
        )
        await say(session_id, update_agent_message(text_block("One test still fails.")))
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(run_agent(SampleAgent()))

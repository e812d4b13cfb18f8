"""Shared helpers for the replay tests: a recorded demo session, commands, comparisons.

No tests here; the replay test modules import it.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
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
    ResourceContentBlock,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from acp_proxy.protocol.frames import Direction
from acp_proxy.protocol.jsonrpc import decode
from acp_proxy.store.reader import Store
from support.paths import DATA

DATA = DATA / "replay"
DEMO_AGENT = [sys.executable, "-m", "acp_proxy.demo.agent"]
DEMO_CLIENT = [sys.executable, "-m", "acp_proxy.demo.client"]
CLI = [sys.executable, "-m", "acp_proxy"]


def replay_agent_cmd(db: Path, *extra: str) -> list[str]:
    return [*CLI, "replay", "agent", "--db", str(db), *extra]


def replay_client_cmd(db: Path, *extra: str) -> list[str]:
    return [*CLI, "replay", "client", "--db", str(db), *extra]


def agent_values(db: Path, capture: int | None = None) -> list[dict[str, Any]]:
    """What the agent said in a capture, parsed (notifications, requests, responses)."""
    store = Store(db)
    try:
        c = store.capture(capture)
        return [
            decode(f.raw) for f in store.frames(c["id"]) if f.direction is Direction.AGENT_TO_CLIENT
        ]
    finally:
        store.close()


def session_cwd(db: Path, capture: int | None = None) -> str:
    store = Store(db)
    try:
        c = store.capture(capture)
        for f in store.frames(c["id"]):
            if f.method == "session/new" and f.kind == "request":
                return str(decode(f.raw)["params"]["cwd"])
    finally:
        store.close()
    raise AssertionError("no session/new in the capture")


def without_cwd(values: list[Any], cwd: str) -> list[Any]:
    """Values with one workspace path replaced by a placeholder, for comparing runs."""
    text = json.dumps(values).replace(cwd, "<cwd>")
    return list(json.loads(text))


def jsonl_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class SdkClient(Client):
    """An editor written with the official SDK: answers for real, collects updates."""

    def __init__(self, workspace: Path, *, permission: str = "allow") -> None:
        self.workspace = workspace
        self.permission = permission
        self.updates: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.cancel: asyncio.Event = asyncio.Event()
        self.terminals: dict[str, subprocess.CompletedProcess[bytes]] = {}

    async def request_permission(
        self, session_id: str, tool_call: Any, options: Any, **kwargs: Any
    ) -> RequestPermissionResponse:
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=self.permission)
        )

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        dumped = update.model_dump(mode="json", by_alias=True, exclude_none=True)
        self.updates.append(dumped)
        content = dumped.get("content")
        if isinstance(content, dict) and content.get("text", "").startswith("step 2"):
            self.cancel.set()

    async def read_text_file(
        self, session_id: str, path: str, **kwargs: Any
    ) -> ReadTextFileResponse:
        return ReadTextFileResponse(content=Path(path).read_text())

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        Path(path).write_text(content)
        return WriteTextFileResponse()

    async def create_terminal(
        self, session_id: str, command: str, args: Any = None, **kwargs: Any
    ) -> CreateTerminalResponse:
        done = await asyncio.to_thread(
            subprocess.run, [command, *(args or [])], capture_output=True, timeout=30
        )
        self.terminals["term_1"] = done
        return CreateTerminalResponse(terminal_id="term_1")

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        return WaitForTerminalExitResponse(exit_code=self.terminals[terminal_id].returncode)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        done = self.terminals[terminal_id]
        return TerminalOutputResponse(
            output=done.stdout.decode(),
            truncated=False,
            exit_status=TerminalExitStatus(exit_code=done.returncode),
        )

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse:
        return ReleaseTerminalResponse()

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self.notes.append(method)


async def sdk_session(command: list[str], workspace: Path) -> tuple[SdkClient, list[Any]]:
    """The demo session, played by an SDK editor against ``command`` over stdio."""
    client = SdkClient(workspace)
    async with spawn_agent_process(client, command[0], *command[1:]) as (conn, _proc):
        return client, await play_demo_session(conn, client, workspace)


async def play_demo_session(conn: Any, client: SdkClient, workspace: Path) -> list[Any]:
    """What the demo client does, through an SDK connection; returns the results."""
    (workspace / "config.json").write_text('{\n  "debug": false,\n  "name": "demo"\n}\n')
    results: list[Any] = []
    init = await conn.initialize(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=True, write_text_file=True),
            terminal=True,
        ),
        client_info=Implementation(name="sdk-editor", version="9.9"),
    )
    results.append(init.agent_info.name if init.agent_info else None)
    session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
    sid = session.session_id
    first = await conn.prompt(
        session_id=sid,
        prompt=[
            text_block("Turn on debug mode in config.json and run the tests."),
            ResourceContentBlock(
                type="resource_link", uri=f"file://{workspace}/config.json", name="config.json"
            ),
        ],
    )
    results.append(first.stop_reason)
    results.append(await conn.ext_method("demo.acp-proxy/stats", {"sessionId": sid}))
    await conn.ext_notification("demo.acp-proxy/client_note", {"note": "custom notification"})
    second = asyncio.ensure_future(
        conn.prompt(session_id=sid, prompt=[text_block("Now refactor everything.")])
    )
    await asyncio.wait_for(client.cancel.wait(), 20)
    await conn.cancel(session_id=sid)
    results.append((await asyncio.wait_for(second, 20)).stop_reason)
    return results

"""A demo ACP v1 agent: no LLM, no network, deterministic (``python -m acp_proxy.demo.agent``).

It plays a short coding session on stdio so the proxy has something realistic to record:
streamed thoughts and messages, a plan, tool calls with diff and terminal content, a
permission prompt, file reads and writes, a client terminal, custom ``_`` methods and
``_meta`` at several levels, and a cancelled turn. It writes compact JSON, one per line.
"""

from __future__ import annotations

import json
import queue
import sys
import threading
import time
from typing import Any

NS = "_demo.acp-proxy"
SESSION = "sess_demo_1"
TEST_SCRIPT = (
    "import sys,time\n"
    "print('\\x1b[1mcollecting\\x1b[0m 3 tests')\n"
    "for i in range(1, 4):\n"
    "    sys.stdout.write(f'\\rrunning test {i}/3'); sys.stdout.flush(); time.sleep(0.01)\n"
    "print('\\r\\x1b[32m3 passed\\x1b[0m in 0.03s   ')\n"
)


class Agent:
    def __init__(self) -> None:
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.next_id = 0
        self.cancelled = False
        self.cwd = "/"
        self.prompts = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in sys.stdin.buffer:
            if line.strip():
                try:
                    self.inbox.put(json.loads(line))
                except ValueError:
                    continue
        self.inbox.put(None)

    def send(self, msg: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(msg, separators=(",", ":"), ensure_ascii=False) + "\n")
        sys.stdout.flush()

    def update(self, update: dict[str, Any], **extra: Any) -> None:
        params: dict[str, Any] = {"sessionId": SESSION, "update": update, **extra}
        self.send({"jsonrpc": "2.0", "method": "session/update", "params": params})

    def call(self, method: str, params: dict[str, Any]) -> Any:
        """Send a request to the client and wait for its answer, handling what comes
        in meanwhile (a session/cancel, say)."""
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            msg = self.inbox.get()
            if msg is None:
                raise SystemExit(0)
            if "method" not in msg and msg.get("id") == rid:
                if "error" in msg:
                    raise RuntimeError(msg["error"].get("message"))
                return msg.get("result")
            self.handle(msg)

    def run(self) -> None:
        while True:
            msg = self.inbox.get()
            if msg is None:
                return
            self.handle(msg)

    def reply(self, msg: dict[str, Any], result: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": msg["id"], "result": result})

    def handle(self, msg: dict[str, Any]) -> None:
        method = msg.get("method")
        p = msg.get("params") or {}
        if method == "initialize":
            self.reply(
                msg,
                {
                    "protocolVersion": 1,
                    "agentCapabilities": {
                        "loadSession": False,
                        "promptCapabilities": {
                            "image": False,
                            "audio": False,
                            "embeddedContext": True,
                        },
                        "mcpCapabilities": {"http": False, "sse": False},
                        "_meta": {"demo.acp-proxy/streaming": True},
                    },
                    "authMethods": [],
                    "agentInfo": {
                        "name": "demo-agent",
                        "title": "acp-proxy demo agent",
                        "version": "1.0.0",
                    },
                    "_meta": {"demo.acp-proxy/build": "deterministic"},
                },
            )
        elif method == "session/new":
            self.cwd = p.get("cwd", "/")
            self.reply(
                msg,
                {
                    "sessionId": SESSION,
                    "modes": {
                        "currentModeId": "code",
                        "availableModes": [
                            {"id": "code", "name": "Code"},
                            {"id": "ask", "name": "Ask"},
                        ],
                    },
                },
            )
        elif method == "session/prompt":
            self.prompts += 1
            self.cancelled = False
            stop = self.first_turn() if self.prompts == 1 else self.second_turn()
            self.reply(msg, {"stopReason": stop, "_meta": {"demo.acp-proxy/turn": self.prompts}})
        elif method == "session/cancel":
            self.cancelled = True
        elif method == f"{NS}/stats":
            self.reply(
                msg,
                {"prompts": self.prompts, "uptimeMs": 12, "_meta": {"demo.acp-proxy/custom": True}},
            )
        elif method is not None and method.startswith("_") and "id" not in msg:
            pass  # custom notification: ignored, as the spec says (docs/protocol.md §7.2)
        elif "id" in msg and method is not None:
            self.send(
                {
                    "jsonrpc": "2.0",
                    "id": msg["id"],
                    "error": {"code": -32601, "message": f"Method not found: {method}"},
                }
            )

    def chunk(self, kind: str, text: str) -> None:
        self.update({"sessionUpdate": kind, "content": {"type": "text", "text": text}})

    def first_turn(self) -> str:
        cwd = self.cwd
        self.chunk("agent_thought_chunk", "The user wants debug mode on. ")
        self.chunk("agent_thought_chunk", "I should read config.json first, then run tests.")
        self.update(
            {
                "sessionUpdate": "plan",
                "entries": [
                    {"content": "Read config.json", "priority": "high", "status": "in_progress"},
                    {"content": "Enable debug", "priority": "high", "status": "pending"},
                    {"content": "Run the tests", "priority": "medium", "status": "pending"},
                ],
            }
        )
        self.update(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "call_read",
                "title": "Read config.json",
                "kind": "read",
                "status": "pending",
                "locations": [{"path": f"{cwd}/config.json"}],
                "rawInput": {"path": f"{cwd}/config.json"},
            }
        )
        old = self.call("fs/read_text_file", {"sessionId": SESSION, "path": f"{cwd}/config.json"})[
            "content"
        ]
        self.update(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "call_read",
                "status": "completed",
                "content": [{"type": "content", "content": {"type": "text", "text": old}}],
            }
        )
        new = old.replace('"debug": false', '"debug": true')
        self.update(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "call_edit",
                "title": "Enable debug in config.json",
                "kind": "edit",
                "status": "in_progress",
                "locations": [{"path": f"{cwd}/config.json", "line": 2}],
                "content": [
                    {
                        "type": "diff",
                        "path": f"{cwd}/config.json",
                        "oldText": old,
                        "newText": new,
                        "_meta": {"demo.acp-proxy/hunks": 1},
                    }
                ],
            }
        )
        self.call(
            "fs/write_text_file",
            {"sessionId": SESSION, "path": f"{cwd}/config.json", "content": new},
        )
        self.update(
            {"sessionUpdate": "tool_call_update", "toolCallId": "call_edit", "status": "completed"}
        )
        self.update(
            {
                "sessionUpdate": "plan",
                "entries": [
                    {"content": "Read config.json", "priority": "high", "status": "completed"},
                    {"content": "Enable debug", "priority": "high", "status": "completed"},
                    {"content": "Run the tests", "priority": "medium", "status": "in_progress"},
                ],
            }
        )
        self.update(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "call_test",
                "title": "Run the tests",
                "kind": "execute",
                "status": "pending",
                "rawInput": {"command": "python3 -m pytest -q"},
            }
        )
        outcome = self.call(
            "session/request_permission",
            {
                "sessionId": SESSION,
                "toolCall": {
                    "toolCallId": "call_test",
                    "title": "Run the tests",
                    "kind": "execute",
                },
                "options": [
                    {"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
                    {"optionId": "always", "name": "Always allow", "kind": "allow_always"},
                    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
                ],
            },
        )["outcome"]
        if outcome.get("outcome") != "selected" or outcome.get("optionId") == "reject":
            self.update(
                {"sessionUpdate": "tool_call_update", "toolCallId": "call_test", "status": "failed"}
            )
            return "end_turn"
        term = self.call(
            "terminal/create",
            {
                "sessionId": SESSION,
                "command": sys.executable,
                "args": ["-c", TEST_SCRIPT],
                "cwd": cwd,
                "env": [{"name": "PYTHONUNBUFFERED", "value": "1"}],
                "outputByteLimit": 65536,
            },
        )["terminalId"]
        self.update(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "call_test",
                "status": "in_progress",
                "content": [{"type": "terminal", "terminalId": term}],
            }
        )
        exit_status = self.call(
            "terminal/wait_for_exit", {"sessionId": SESSION, "terminalId": term}
        )
        output = self.call("terminal/output", {"sessionId": SESSION, "terminalId": term})
        self.call("terminal/release", {"sessionId": SESSION, "terminalId": term})
        ok = exit_status.get("exitCode") == 0
        self.update(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "call_test",
                "status": "completed" if ok else "failed",
                "rawOutput": {
                    "exitCode": exit_status.get("exitCode"),
                    "bytes": len(output.get("output", "")),
                },
            }
        )
        self.send(
            {
                "jsonrpc": "2.0",
                "method": f"{NS}/progress",
                "params": {"sessionId": SESSION, "done": 3, "total": 3},
            }
        )
        for piece in (
            "Debug mode is on ",
            "and all 3 tests pass. ",
            "I changed `config.json` only.",
        ):
            self.chunk("agent_message_chunk", piece)
        self.update(
            {
                "sessionUpdate": "usage_update",
                "used": 5321,
                "size": 200000,
                "cost": {"amount": 0.0, "currency": "USD"},
            },
            _meta={"demo.acp-proxy/level": "params"},
        )
        return "end_turn"

    def second_turn(self) -> str:
        self.chunk("agent_thought_chunk", "A long refactor; streaming slowly.")
        for i in range(50):
            if self.cancelled:
                return "cancelled"
            self.chunk("agent_message_chunk", f"step {i} ")
            deadline = time.monotonic() + 0.05
            while time.monotonic() < deadline:  # let a session/cancel arrive
                try:
                    msg = self.inbox.get(timeout=max(deadline - time.monotonic(), 0))
                except queue.Empty:
                    break
                if msg is None:
                    raise SystemExit(0)
                self.handle(msg)
                if self.cancelled:
                    return "cancelled"
        return "end_turn"


def main() -> None:
    Agent().run()


if __name__ == "__main__":
    main()

"""A demo ACP v1 client that drives an agent command over stdio (``python -m
acp_proxy.demo.client [--workspace DIR] -- AGENT_CMD...``).

It plays the editor: it answers the agent's permission, file and terminal requests for real
(files live in a scratch workspace, terminals are real subprocesses), sends two prompts, a
custom request and notification, and cancels the second turn. Prints a short transcript to
stderr; exits 0 when the session went as expected.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO, Any

NS = "_demo.acp-proxy"


class Client:
    def __init__(self, argv: list[str], workspace: Path) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.w: IO[bytes] = self.proc.stdin
        self.r: IO[bytes] = self.proc.stdout
        self.workspace = workspace
        self.next_id = 0
        self.terminals: dict[str, _Terminal] = {}
        self.updates: list[str] = []
        self.on_update: Any = None

    def send(self, msg: dict[str, Any]) -> None:
        self.w.write(json.dumps(msg, separators=(",", ":")).encode() + b"\n")
        self.w.flush()

    def call(self, method: str, params: dict[str, Any]) -> Any:
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            line = self.r.readline()
            if not line:
                raise RuntimeError(f"agent closed the connection during {method}")
            msg = json.loads(line)
            if "method" not in msg and msg.get("id") == rid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]
            self.handle(msg)

    def handle(self, msg: dict[str, Any]) -> None:
        method = msg.get("method")
        p = msg.get("params") or {}
        if method == "session/update":
            kind = p["update"].get("sessionUpdate")
            self.updates.append(kind)
            if self.on_update:
                self.on_update(p["update"])
            return
        if "id" not in msg:
            return  # custom or unknown notification
        try:
            result = self.serve(method, p)
        except Exception as e:  # report to the agent, as an editor would
            self.send(
                {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32603, "message": str(e)}}
            )
            return
        self.send({"jsonrpc": "2.0", "id": msg["id"], "result": result})

    def serve(self, method: str | None, p: dict[str, Any]) -> Any:
        if method == "session/request_permission":
            return {"outcome": {"outcome": "selected", "optionId": "allow"}}
        if method == "fs/read_text_file":
            return {"content": Path(p["path"]).read_text()}
        if method == "fs/write_text_file":
            Path(p["path"]).write_text(p["content"])
            return {}
        if method == "terminal/create":
            tid = f"term_{len(self.terminals) + 1}"
            env = {e["name"]: e["value"] for e in p.get("env", [])}
            self.terminals[tid] = _Terminal(
                [p["command"], *p.get("args", [])], p.get("cwd"), {**os.environ, **env}
            )
            return {"terminalId": tid}
        if method == "terminal/wait_for_exit":
            code = self.terminals[p["terminalId"]].wait()
            return {"exitCode": code, "signal": None}
        if method == "terminal/output":
            term = self.terminals[p["terminalId"]]
            polled = term.proc.poll()
            exit_status = {"exitCode": polled, "signal": None} if polled is not None else None
            return {
                "output": term.out.decode("utf-8", "replace"),
                "truncated": False,
                "exitStatus": exit_status,
            }
        if method == "terminal/release":
            term = self.terminals.pop(p["terminalId"])
            if term.proc.poll() is None:
                term.proc.kill()
            return {}
        raise RuntimeError(f"Method not found: {method}")


class _Terminal:
    """A real subprocess whose combined output is collected, as an editor's terminal."""

    def __init__(self, argv: list[str], cwd: str | None, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        self.out = bytearray()
        self._thread = threading.Thread(target=self._collect, daemon=True)
        self._thread.start()

    def _collect(self) -> None:
        assert self.proc.stdout is not None
        for chunk in iter(lambda: os.read(self.proc.stdout.fileno(), 4096), b""):  # type: ignore[union-attr]
            self.out += chunk

    def wait(self) -> int:
        code = self.proc.wait()
        self._thread.join()
        return code


def run(argv: list[str], workspace: Path) -> tuple[int, int]:
    """Play the session; returns (0 when it went as expected else 1, the agent's pid)."""
    (workspace / "config.json").write_text('{\n  "debug": false,\n  "name": "demo"\n}\n')
    c = Client(argv, workspace)
    log = sys.stderr
    init = c.call(
        "initialize",
        {
            "protocolVersion": 1,
            "clientCapabilities": {
                "fs": {"readTextFile": True, "writeTextFile": True},
                "terminal": True,
                "_meta": {"demo.acp-proxy/pane": "right"},
            },
            "clientInfo": {
                "name": "demo-client",
                "title": "acp-proxy demo client",
                "version": "1.0.0",
            },
            "_meta": {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
        },
    )
    print(
        f"demo: agent {init['agentInfo']['name']} speaks ACP v{init['protocolVersion']}", file=log
    )
    sid = c.call("session/new", {"cwd": str(workspace), "mcpServers": []})["sessionId"]
    r1 = c.call(
        "session/prompt",
        {
            "sessionId": sid,
            "prompt": [
                {"type": "text", "text": "Turn on debug mode in config.json and run the tests."},
                {
                    "type": "resource_link",
                    "uri": f"file://{workspace}/config.json",
                    "name": "config.json",
                },
            ],
        },
    )
    print(f"demo: turn 1 ended: {r1['stopReason']} ({len(c.updates)} updates)", file=log)
    stats = c.call(f"{NS}/stats", {"sessionId": sid, "_meta": {"demo.acp-proxy/ask": "all"}})
    c.send(
        {
            "jsonrpc": "2.0",
            "method": f"{NS}/client_note",
            "params": {"note": "custom notification", "_meta": {"demo.acp-proxy/x": 1}},
        }
    )
    print(f"demo: custom request answered: {stats}", file=log)

    sent_cancel = threading.Event()

    def cancel_after_a_few(update: dict[str, Any]) -> None:
        text = update.get("content", {}).get("text", "")
        if text.startswith("step 2") and not sent_cancel.is_set():
            sent_cancel.set()
            c.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}})

    c.on_update = cancel_after_a_few
    r2 = c.call(
        "session/prompt",
        {"sessionId": sid, "prompt": [{"type": "text", "text": "Now refactor everything."}]},
    )
    print(f"demo: turn 2 ended: {r2['stopReason']}", file=log)
    c.w.close()
    code = c.proc.wait(timeout=30)
    ok = r1["stopReason"] == "end_turn" and r2["stopReason"] == "cancelled" and code == 0
    written = (workspace / "config.json").read_text()
    ok = ok and '"debug": true' in written
    return (0 if ok else 1), c.proc.pid


def main(args: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if args is None else args)
    workspace: Path | None = None
    if args[:1] == ["--workspace"]:
        workspace = Path(args[1])
        args = args[2:]
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        print(
            "usage: python -m acp_proxy.demo.client [--workspace DIR] -- AGENT_CMD...",
            file=sys.stderr,
        )
        raise SystemExit(2)
    if workspace is None:
        with tempfile.TemporaryDirectory(prefix="acp-demo-") as tmp:
            raise SystemExit(run(args, Path(tmp))[0])
    workspace.mkdir(parents=True, exist_ok=True)
    raise SystemExit(run(args, workspace)[0])


if __name__ == "__main__":
    main()

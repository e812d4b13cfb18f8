"""A scripted editor for the real agents: JSON-RPC written by hand, over the stdio of a
process or over a WebSocket, keeping every byte it received exactly as it came — the
client's view the tests compare with what acp-proxy recorded.

No tests here; the test modules import it.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from support.realpeers import RealPeer

Message = dict[str, Any]


class Wire(Protocol):
    def send(self, payload: bytes) -> None: ...
    def get(self, timeout: float) -> bytes | None: ...
    def close(self) -> None: ...


class StdioWire:
    """A process spoken to on its stdin and stdout; ``received`` is every byte of its
    stdout as read, ``sent`` every byte written to its stdin."""

    def __init__(self, argv: list[str], *, env: dict[str, str], cwd: Path, stderr: Path) -> None:
        with stderr.open("wb") as err:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env, cwd=cwd
            )
        self.sent, self.received = bytearray(), bytearray()
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        fd, pending = self.proc.stdout.fileno(), b""
        while chunk := os.read(fd, 65536):
            self.received += chunk
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                self._lines.put(line)
        self._lines.put(None)

    def send(self, payload: bytes) -> None:
        assert self.proc.stdin is not None
        self.sent += payload + b"\n"
        self.proc.stdin.write(payload + b"\n")
        self.proc.stdin.flush()

    def get(self, timeout: float) -> bytes | None:
        return self._lines.get(timeout=timeout)

    def close(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()

    def finish(self, timeout: float) -> int:
        """Close stdin, then the exit status once the process is done and its stdout read."""
        self.close()
        code = self.proc.wait(timeout)
        self._reader.join(timeout)
        return code

    def __enter__(self) -> StdioWire:
        return self

    def __exit__(self, *exc: object) -> None:
        """The process killed if it still runs, its pipes closed."""
        self.close()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)
        self._reader.join(30)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


class WsWire:
    """A WebSocket client with no compression, pings or size limit; ``received`` is each
    message as (opcode, payload)."""

    def __init__(self, url: str) -> None:
        self.ws: ClientConnection = connect(
            url, compression=None, max_size=None, ping_interval=None, open_timeout=30, legacy=True
        )
        self.sent: list[tuple[str, bytes]] = []
        self.received: list[tuple[str, bytes]] = []
        self._messages: queue.Queue[bytes | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        with contextlib.suppress(ConnectionClosed):
            while True:
                m = self.ws.recv()
                payload = m.encode() if isinstance(m, str) else m
                self.received.append(("text" if isinstance(m, str) else "binary", payload))
                self._messages.put(payload)
        self._messages.put(None)

    def send(self, payload: bytes) -> None:
        self.sent.append(("text", payload))
        self.ws.send(payload.decode())

    def get(self, timeout: float) -> bytes | None:
        return self._messages.get(timeout=timeout)

    def close(self) -> None:
        self.ws.close()
        self._reader.join(30)

    def __enter__(self) -> WsWire:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Editor:
    """Requests with their own ids, answers waited for with a timeout, everything the
    agent said kept in ``seen``; an agent's own request is answered with an error."""

    def __init__(self, wire: Wire, timeout: float = 30) -> None:
        self.wire, self.timeout = wire, timeout
        self.seen: list[Message] = []
        self._ids = itertools.count()

    def send(self, message: Message) -> None:
        self.wire.send(json.dumps(message, separators=(",", ":")).encode())

    def request(self, method: str, params: Message) -> Message:
        rid = next(self._ids)
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return self.wait(lambda m: m.get("id") == rid and "method" not in m, f"the {method} answer")

    def notify(self, method: str, params: Message) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait(self, wanted: Callable[[Message], bool], what: str) -> Message:
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                raw = self.wire.get(max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {what} after {self.timeout} s") from None
            if raw is None:
                raise AssertionError(f"the connection ended before {what}")
            message = json.loads(raw)
            self.seen.append(message)
            if "method" in message and "id" in message:
                error = {"code": -32601, "message": "not offered by this editor"}
                self.send({"jsonrpc": "2.0", "id": message["id"], "error": error})
            if wanted(message):
                return message


def open_session(editor: Editor, agent: RealPeer, cwd: Path) -> str:
    """What an editor does first: initialize, sign in when it has to, open a session."""
    if agent.protocol == 2:
        init: Message = {"protocolVersion": 2, "info": _INFO, "capabilities": {}}
    else:
        caps = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
        init = {"protocolVersion": 1, "clientCapabilities": caps, "clientInfo": _INFO}
    answer = editor.request("initialize", init)
    assert answer.get("result", {}).get("protocolVersion") == agent.protocol, answer
    if agent.login is not None:
        method, method_id = agent.login
        assert "result" in editor.request(method, {"methodId": method_id})
    params: Message = {"cwd": str(cwd)}
    if agent.protocol == 1:
        params["mcpServers"] = []
    session = editor.request("session/new", params)
    assert "result" in session, session
    if agent.announces is not None:
        editor.wait(lambda m: _update_kind(m) == agent.announces, agent.announces)
    return str(session["result"]["sessionId"])


_INFO = {"name": "acp-proxy-tests", "version": "0"}


def prompt_fails(editor: Editor, agent: RealPeer, session: str) -> Message:
    """One prompt, which fails for want of a network; the message that says so. A v1 turn
    ends with the error answer; a v2 agent acknowledges the prompt and reports the failure
    in an update — and retries for ever, so the editor cancels, as a user would, and waits
    for the turn to end."""
    prompt = [{"type": "text", "text": "hello"}]
    answer = editor.request("session/prompt", {"sessionId": session, "prompt": prompt})
    failed = agent.failure.decode()
    if agent.protocol == 1:
        assert failed in json.dumps(answer.get("error")), answer
        return answer
    assert "messageId" in answer.get("result", {}), answer
    update = editor.wait(lambda m: failed in json.dumps(m), "the network failure")
    editor.notify("session/cancel", {"sessionId": session})
    end = editor.wait(_idle, "the end of the turn")
    assert end["params"]["update"].get("stopReason") == "cancelled", end
    return update


def _idle(m: Message) -> bool:
    update = m.get("params", {}).get("update", {})
    return isinstance(update, dict) and update.get("state") == "idle"


def _update_kind(m: Message) -> object:
    update = m.get("params", {}).get("update", {}) if m.get("method") == "session/update" else {}
    return update.get("sessionUpdate") if isinstance(update, dict) else None


@contextlib.contextmanager
def listening(
    argv: list[str], *, env: dict[str, str], cwd: Path, stderr: Path
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``acp-proxy ws --listen 127.0.0.1:0 ...`` started, with the URL it printed."""
    with stderr.open("wb") as err:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stderr=err, env=env, cwd=cwd)
    try:
        deadline = time.monotonic() + 30
        while b"listening on " not in (text := stderr.read_bytes()):
            assert proc.poll() is None, text.decode(errors="replace")
            assert time.monotonic() < deadline, "acp-proxy ws printed no URL in 30 s"
            time.sleep(0.02)
        line = text.split(b"listening on ", 1)[1].split(b"\n", 1)[0]
        yield proc, line.split()[0].decode()
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)

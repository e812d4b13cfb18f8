"""The demo agent with one deliberate change, for replay tests (``changed_agent.py MODE``).

MODE: ``status`` (the test run's tool call fails), ``stop`` (turn 1 ends with ``refusal``),
``title`` (a tool call has another title), ``ask`` (it also reads a file it never read before),
``fresh`` (no change but a new session id per ``session/new``, as real agents mint them),
``command`` (its terminal runs the interpreter by another path), ``content`` (it writes other
file contents), ``exit`` (it exits 3 at the end of the session).
"""

from __future__ import annotations

import contextlib
import sys
import uuid
from typing import Any

from acp_proxy.demo import agent as demo

MODE = sys.argv[1] if len(sys.argv) > 1 else "status"


class Changed(demo.Agent):
    def update(self, update: dict[str, Any], **extra: Any) -> None:
        failed = update.get("toolCallId") == "call_test" and update.get("status") == "completed"
        if MODE == "status" and failed:
            update = {**update, "status": "failed"}
        if MODE == "title" and update.get("title") == "Read config.json":
            update = {**update, "title": "Read the configuration"}
        super().update(update, **extra)

    def call(self, method: str, params: dict[str, Any]) -> Any:
        if MODE == "command" and method == "terminal/create":
            params = {**params, "command": sys.executable}  # works, but by another path
        if MODE == "content" and method == "fs/write_text_file":
            params = {**params, "content": params["content"] + "\n"}
        if MODE == "ask" and method == "fs/read_text_file":
            extra = {**params, "path": params["path"].replace("config.json", "secrets.env")}
            with contextlib.suppress(RuntimeError):  # no answer recorded for it: carry on
                super().call(method, extra)
        return super().call(method, params)

    def first_turn(self) -> str:
        stop = super().first_turn()
        return "refusal" if MODE == "stop" else stop


if __name__ == "__main__":
    if MODE == "fresh":
        demo.SESSION = f"sess_{uuid.uuid4().hex}"
    Changed().run()
    if MODE == "exit":
        sys.exit(3)

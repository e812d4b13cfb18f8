"""The demo agent with one deliberate change, for the diff tests (``diff_agent.py MODE``).

MODE: ``answer`` (one word of the final answer differs), ``file`` (it writes other
content), ``terminal`` (its test run prints and exits differently), ``title`` (a tool
call has another title).
"""

from __future__ import annotations

import copy
import sys
from typing import Any

from acp_proxy.demo import agent as demo

MODE = sys.argv[1] if len(sys.argv) > 1 else "answer"


class Changed(demo.Agent):
    def send(self, msg: dict[str, Any]) -> None:
        msg = copy.deepcopy(msg)
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        update = params.get("update") if isinstance(params.get("update"), dict) else {}
        content = update.get("content") if isinstance(update.get("content"), dict) else {}
        chunk = update.get("sessionUpdate") == "agent_message_chunk"
        if MODE == "answer" and chunk and isinstance(content.get("text"), str):
            content["text"] = content["text"].replace("tests pass", "tests fail")
        if MODE == "file" and msg.get("method") == "fs/write_text_file":
            params["content"] = params["content"].replace('"name": "demo"', '"name": "other"')
        if MODE == "terminal" and msg.get("method") == "terminal/create":
            params["args"] = ["-c", "import sys; print('1 failed'); sys.exit(3)"]
        if MODE == "title" and update.get("title") == "Run the tests":
            update["title"] = "Run the test suite"
        super().send(msg)


if __name__ == "__main__":
    Changed().run()

"""The demo agent leaking one fake secret of every class, for the redaction tests.

Every value here is made up; each only has the shape of a real credential. The GitHub
token appears in three places (a terminal's env, a message chunk, a tool call's input);
the Anthropic key is split across two message chunks (so it is in no single frame and
not in :data:`SECRETS`).
"""

from __future__ import annotations

import copy
from typing import Any

from acp_proxy.demo import agent as demo

GITHUB = "ghp_" + "Zq3" * 12  # 36 characters after the prefix
ANTHROPIC = "sk-ant-api03-" + "Xy7_" * 10
AWS = "AKIA" + "QWERTYUIOP123456"
SLACK = "xoxb-123456789012-abcdefABCDEF"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJkZW1vIn0.c2lnbmF0dXJlLWZha2UtdmFsdWU"
PASSWORD = "hunter2-not-real"
URL = f"https://deploy:{PASSWORD}@git.example.com/repo.git?access_token=tok-{'9' * 12}"
PRIVATE = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAA\n"
    "-----END OPENSSH PRIVATE KEY-----"
)
META_SECRET = "meta-value-nobody-should-see"
SECRETS = {
    "github": GITHUB,
    "aws": AWS,
    "slack": SLACK,
    "jwt": JWT,
    "password": PASSWORD,
    "access_token": f"tok-{'9' * 12}",
    "private": "b3BlbnNzaC1rZXktdjEAAAAA",
    "meta": META_SECRET,
}


class Leaky(demo.Agent):
    def __init__(self) -> None:
        super().__init__()
        self.leaked = False

    def send(self, msg: dict[str, Any]) -> None:
        msg = copy.deepcopy(msg)
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        update = params.get("update") if isinstance(params.get("update"), dict) else {}
        if msg.get("method") == "terminal/create":
            params["env"].append({"name": "GITHUB_TOKEN", "value": GITHUB})
        if isinstance(msg.get("result"), dict) and "agentInfo" in msg["result"]:
            msg["result"]["_meta"]["acme.dev/apiToken"] = SLACK
        if update.get("sessionUpdate") == "tool_call" and update.get("toolCallId") == "call_read":
            update["rawInput"] = {"path": "config.json", "token": GITHUB, "remote": URL}
            params["_meta"] = {"acme.dev/secret": META_SECRET, "trace": f"Bearer {JWT}"}
        if update.get("sessionUpdate") == "agent_message_chunk" and not self.leaked:
            self.leaked = True
            half = len(ANTHROPIC) // 2
            self.chunk("agent_message_chunk", f"Using {GITHUB} and the key {ANTHROPIC[:half]}")
            self.chunk("agent_message_chunk", f"{ANTHROPIC[half:]}; AWS {AWS}.\n{PRIVATE}\n")
        super().send(msg)


if __name__ == "__main__":
    Leaky().run()

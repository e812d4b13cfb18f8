"""A terminal's command is shown as a shell would read it: a script of several lines keeps
its lines (it was squashed into one before)."""

from __future__ import annotations

import json

from acp_proxy.protocol.frames import Direction, Frame
from acp_proxy.reconstruct import reconstruct
from acp_proxy.text.style import plain
from acp_proxy.text.views import terminals_lines


def test_a_multi_line_script_keeps_its_lines() -> None:
    create = {"jsonrpc": "2.0", "id": 7, "method": "terminal/create",
              "params": {"sessionId": "s", "command": "bash",
                         "args": ["-c", "set -e\necho one\necho two"]}}  # fmt: skip
    answer = {"jsonrpc": "2.0", "id": 7, "result": {"terminalId": "t1"}}
    frames = [
        Frame(0, Direction.AGENT_TO_CLIENT, 0, json.dumps(create).encode(), True),
        Frame(1, Direction.CLIENT_TO_AGENT, 1, json.dumps(answer).encode(), True),
    ]
    lines = [
        plain(x) if not isinstance(x, str) else x for x in terminals_lines(reconstruct(frames))
    ]
    assert "    $ bash -c 'set -e" in lines
    assert "    > echo one" in lines and "    > echo two'" in lines

"""A test agent that dies in the middle of a turn.

usage: crash_agent.py [EXIT_CODE]
Answers initialize and session/new, then on session/prompt writes an update, a traceback
on stderr, and exits with EXIT_CODE (default 3) without answering the prompt.
"""

import json
import sys
import time

code = int(sys.argv[1]) if len(sys.argv) > 1 else 3


def send(obj: object) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    msg = json.loads(line)
    method = msg.get("method")
    if method == "initialize":
        sys.stderr.write("agent starting\n")
        sys.stderr.flush()
        # stderr and stdout are read by two threads of the relay, each time-stamped when
        # read: a moment between the two writes keeps their order on a loaded machine
        time.sleep(0.1)
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": 1}})
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"sessionId": "s1"}})
    elif method == "session/prompt":
        send(
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {
                    "sessionId": "s1",
                    "update": {
                        "sessionUpdate": "agent_message_chunk",
                        "content": {"type": "text", "text": "working"},
                    },
                },
            }
        )
        time.sleep(0.05)
        sys.stderr.write("Traceback (most recent call last):\nRuntimeError: boom\n")
        sys.stderr.flush()
        time.sleep(0.05)
        sys.exit(code)

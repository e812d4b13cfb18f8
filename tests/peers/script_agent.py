"""A test agent that plays its side of a scripted conversation, in order.

usage: script_agent.py SCRIPT
SCRIPT has one JSON array per line: ["a2c", TEXT] is written to stdout as a line,
["c2a", TEXT] is waited for (one line read from stdin), ["stderr", TEXT] is written to
stderr. TEXT is written as UTF-8 with surrogate escapes, so any byte can be scripted. The
client plays the other side (tests/support/hostile.py), so each message reaches the
proxy before the next one exists, and the recording's order is the script's.
"""

import json
import sys

with open(sys.argv[1], encoding="utf-8") as f:
    steps = [json.loads(line) for line in f if line.strip()]
for where, text in steps:
    data = text.encode("utf-8", "surrogateescape")
    if where == "a2c":
        sys.stdout.buffer.write(data + b"\n")
        sys.stdout.buffer.flush()
    elif where == "stderr":
        sys.stderr.buffer.write(data)
        sys.stderr.buffer.flush()
    elif not sys.stdin.buffer.readline():
        break
while sys.stdin.buffer.read(1 << 16):
    pass

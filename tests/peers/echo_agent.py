"""A byte-level test agent: copies its stdin to a file and writes a file to its stdout.

usage: echo_agent.py STDIN_COPY STDOUT_SOURCE [CHUNK_SIZES] [--exit N]
STDOUT_SOURCE is written in chunks of the given comma-separated sizes (cycled), each
flushed and followed by a short pause so the proxy sees them as separate reads.
"""

import os
import sys
import time

copy_path, source_path = sys.argv[1], sys.argv[2]
sizes = [int(s) for s in sys.argv[3].split(",")] if len(sys.argv) > 3 and sys.argv[3] else []
exit_code = int(sys.argv[sys.argv.index("--exit") + 1]) if "--exit" in sys.argv else 0

with open(source_path, "rb") as f:
    data = f.read()
pos, i = 0, 0
while pos < len(data):
    n = sizes[i % len(sizes)] if sizes else len(data)
    os.write(1, data[pos : pos + n])
    pos += n
    i += 1
    if sizes:
        time.sleep(0.002)
with open(copy_path, "wb") as out:
    while True:
        chunk = os.read(0, 1 << 16)
        if not chunk:
            break
        out.write(chunk)
sys.exit(exit_code)

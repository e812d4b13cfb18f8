"""A test agent for lifecycle cases.

usage: lifecycle_agent.py MODE [ARG]
  crash N        write a line and part of another, then exit N
  kill SIG       write a line, then kill itself with signal SIG
  ignore-eof     write a line, keep running after stdin closes (until terminated)
  trap           report received signals on stdout as JSON lines, exit 0 on SIGTERM
  stderr         write bytes to stderr (including invalid UTF-8), then exit 0
  flood N        write N notifications as fast as possible, then wait for EOF
  partial        write half a line, wait for one line on stdin, then finish the line
"""

import json
import os
import signal
import sys
import time

mode = sys.argv[1]
arg = sys.argv[2] if len(sys.argv) > 2 else ""
out = sys.stdout.buffer


def line(obj: object) -> None:
    out.write(json.dumps(obj).encode() + b"\n")
    out.flush()


if mode == "crash":
    line({"jsonrpc": "2.0", "method": "session/update", "params": {"n": 1}})
    out.write(b'{"jsonrpc":"2.0","meth')
    out.flush()
    os._exit(int(arg))
elif mode == "kill":
    line({"jsonrpc": "2.0", "method": "x"})
    os.kill(os.getpid(), getattr(signal, arg))
    time.sleep(10)
elif mode == "ignore-eof":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    line({"jsonrpc": "2.0", "method": "ready"})
    sys.stdin.buffer.read()
    time.sleep(60)
elif mode == "trap":
    got = []

    def handler(signum: int, _frame: object) -> None:
        name = signal.Signals(signum).name
        got.append(name)
        line({"jsonrpc": "2.0", "method": "_signal", "params": {"name": name}})
        if signum == signal.SIGTERM:
            sys.exit(0)

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, handler)
    line({"jsonrpc": "2.0", "method": "ready"})
    while True:
        time.sleep(0.05)
elif mode == "stderr":
    os.write(2, b"log line one\n\xff\xfe not utf-8\npartial")
    line({"jsonrpc": "2.0", "method": "done"})
elif mode == "partial":
    out.write(b'{"jsonrpc":"2.0","method":"half')
    out.flush()
    sys.stdin.buffer.readline()
    out.write(b'-and-rest"}\n')
    out.flush()
elif mode == "flood":
    payload = (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":'
        b'{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"%08d"}}}}\n'
    )
    n = int(arg)
    batch = 500
    for start in range(0, n, batch):
        os.write(1, b"".join(payload % i for i in range(start, min(start + batch, n))))
    sys.stdin.buffer.read()

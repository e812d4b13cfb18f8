"""The program an npm launcher starts (tests/peers/launcher_agent.py): it runs until killed.

usage: native_child.py [LOG]
Writes "ready" on stdout, then sleeps; appends each SIGTERM, SIGINT or SIGHUP it gets to
LOG (when given) and exits 128+N, unless the signal is ignored (the launcher's --stubborn).
It never reads stdin, so the end of stdin does not end it.
"""

import os
import signal
import sys
import time

log = sys.argv[1] if len(sys.argv) > 1 else None


def on_signal(signum: int, _frame: object) -> None:
    if log:
        with open(log, "a") as f:
            f.write(f"child {signal.Signals(signum).name}\n")
    os._exit(128 + signum)


for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    if signal.getsignal(s) is not signal.SIG_IGN:
        signal.signal(s, on_signal)
sys.stdout.write("ready\n")
sys.stdout.flush()
while True:
    time.sleep(60)

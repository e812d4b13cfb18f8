"""A test agent shaped like an npm launcher: a wrapper that starts the real program below it.

usage: launcher_agent.py [--pids FILE] [--stubborn] [--exit-now] [--log FILE] -- CMD...
Starts CMD with our stdin, stdout and stderr (as `node` starts a native binary with
`stdio: 'inherit'`), writes "LAUNCHER_PID CHILD_PID" to FILE, and waits for it. On SIGTERM
the wrapper exits at once (143) without passing the signal on, as many launchers do.
- --stubborn: CMD ignores SIGTERM (an ignored signal stays ignored across exec), so only
  SIGKILL ends it;
- --exit-now: the wrapper exits 0 as soon as CMD is started, leaving it running with our
  stdout;
- --log FILE: the wrapper appends the signals it gets to FILE.
"""

import os
import signal
import subprocess
import sys

args = sys.argv[1:]
split = args.index("--")
opts, cmd = args[:split], args[split + 1 :]
pids = opts[opts.index("--pids") + 1] if "--pids" in opts else None
log = opts[opts.index("--log") + 1] if "--log" in opts else None


def on_term(signum: int, _frame: object) -> None:
    if log:
        with open(log, "a") as f:
            f.write(f"launcher {signal.Signals(signum).name}\n")
    os._exit(128 + signum)


if "--stubborn" in opts:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen(cmd)
signal.signal(signal.SIGTERM, on_term)
if pids:
    with open(pids + ".tmp", "w") as f:
        f.write(f"{os.getpid()} {child.pid}\n")
    os.rename(pids + ".tmp", pids)
if "--exit-now" in opts:
    os._exit(0)
sys.exit(child.wait())

"""Run a command as this very process, with a copy of its stdout kept in a file: what the
program that started us (a client such as acpx) received, byte for byte.

usage: tee_stdout.py FILE COMMAND [ARG...]

The command is exec'd in place of this script, so it keeps our pid: the client's signals
(SIGTERM, SIGKILL) reach it exactly as they would without the copy. The copying is done by
a helper that is not its child (forked twice, then on its own): it reads the command's
stdout from a pipe, appends to FILE, writes the same bytes on to the client, and ends when
every holder of the pipe's write end has closed it.
"""

import os
import sys

path, argv = sys.argv[1], sys.argv[2:]
read_end, write_end = os.pipe()
first = os.fork()
if first == 0:
    if os.fork() != 0:
        os._exit(0)
    os.close(write_end)
    os.setsid()  # a kill of the command's process group is not meant for the copier
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)  # the command's stdin and stderr are none of the copier's business
    os.dup2(null, 2)
    client = True
    with open(path, "wb") as copy:
        while chunk := os.read(read_end, 1 << 16):
            copy.write(chunk)
            copy.flush()
            view = memoryview(chunk)
            while client and view:
                try:
                    view = view[os.write(1, view) :]
                except BrokenPipeError:
                    client = False  # the client is gone; the file still gets what was sent
    os._exit(0)
os.waitpid(first, 0)
os.close(read_end)
os.dup2(write_end, 1)
os.close(write_end)
os.execvp(argv[0], argv)

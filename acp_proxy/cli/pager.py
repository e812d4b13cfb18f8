"""The pager long text output goes through on a terminal.

What belongs here: choosing and starting the pager (``$ACP_PROXY_PAGER``, else ``$PAGER``,
else ``less``; ``LESS`` defaults to ``FRX`` as git sets it: quit when the text fits one
screen, keep colours, leave the text on the screen), and waiting for it. Used through
:func:`acp_proxy.cli.common.paged`.
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import signal
import subprocess
from typing import IO

__all__ = ["Pager", "pager_command", "start_pager"]


def pager_command() -> list[str] | None:
    """The pager to run, or None for none."""
    for name in ("ACP_PROXY_PAGER", "PAGER"):
        value = os.environ.get(name)
        if value is not None:
            words = shlex.split(value) if value.strip() else []
            return None if not words or words == ["cat"] else words
    return ["less"]


class Pager:
    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdin is not None
        self.proc = proc
        self.stdin: IO[str] = io.TextIOWrapper(
            proc.stdin, encoding="utf-8", errors="replace", line_buffering=False
        )

    def finish(self) -> None:
        """Close the pager's input and wait until the user leaves it; Ctrl-C meanwhile is
        the pager's, not ours (as git does)."""
        with contextlib.suppress(BrokenPipeError, OSError, ValueError):
            self.stdin.close()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            self.proc.wait()
        finally:
            signal.signal(signal.SIGINT, previous)


def start_pager() -> Pager | None:
    words = pager_command()
    if words is None:
        return None
    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    env.setdefault("LV", "-c")
    try:
        proc = subprocess.Popen(words, stdin=subprocess.PIPE, env=env)
    except OSError:
        return None  # no such pager: print as if there were none
    return Pager(proc)

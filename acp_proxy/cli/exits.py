"""How a command ends: the one place an outcome becomes a line on stderr and an exit status.

The rules, for every command:

- it returns ``None`` (status 0) or its status as a number: findings (``check``),
  differences (``diff``, ``replay client``), the agent's own exit code (``record``);
- it raises a :class:`~acp_proxy.errors.ProxyError` for whatever stops it, and leaves with
  that error's ``exit_code`` after one line, ``acp-proxy: error: MESSAGE``
  (:mod:`acp_proxy.errors`: 2 the user's, 4 the peer's, 1 or 3 ours);
- Ctrl-C is status 130, as a shell expects, without a traceback; a reader that closed our
  stdout (``acp-proxy show | head``) is status 0.

Nothing else in the command line exits. A command that relays (:func:`relaying`) leaves at
once (``os._exit``, once the output is flushed) rather than through the interpreter's
shutdown: its pump threads may be blocked reading a pipe the peer still holds open, and the
shutdown would wait for them.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from typing import NoReturn

import click

from acp_proxy.cli.common import echo
from acp_proxy.errors import ProxyError

__all__ = ["finish", "relaying"]

_AT_ONCE = "acp_proxy.at_once"  # in the context's meta: the running command relays


def relaying() -> None:
    """The running command relays: it leaves at once, whatever ends it."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.meta[_AT_ONCE] = True


def finish(ctx: click.Context, run: Callable[[], object]) -> NoReturn:
    """Run a command (``run``: the root group invoking it, in ``ctx``) and leave as it
    says."""
    try:
        status = run()
    except ProxyError as e:
        _leave(ctx, e.exit_code, f"acp-proxy: error: {e}")
    except KeyboardInterrupt:
        _leave(ctx, 130, at_once=True)
    except BrokenPipeError:
        _leave(ctx, 0, at_once=True)
    _leave(ctx, status if isinstance(status, int) else 0)


def _leave(
    ctx: click.Context, code: int, line: str | None = None, *, at_once: bool = False
) -> NoReturn:
    if line is not None:
        echo(line, err=True)
    if at_once or ctx.meta.get(_AT_ONCE):
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)
    ctx.exit(code)

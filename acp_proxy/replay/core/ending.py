"""How the recorded agent's process ended, from a capture's events (pure, sans-I/O).

What belongs here: reading the ``spawn``, ``signal``, ``terminate``, ``client_eof`` and
``exit`` events of a recording for what ``replay client`` compares and plays: the agent's
own exit code (when it ended by itself), and how the recorded client ended it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

__all__ = ["client_ending", "client_eof_ns", "own_exit"]


def own_exit(capture: dict[str, Any], events: Iterable[dict[str, Any]]) -> int | None:
    """The exit code of a recorded agent process when the agent ended on its own; None
    when it is not the agent's behaviour — the client or the proxy ended it (a signal
    passed on from the editor, a termination after the client left) — or unknown (a
    remote agent, a capture still running)."""
    code = capture.get("exit_code")
    if not isinstance(code, int) or isinstance(code, bool):
        return None
    spawned = False
    for e in events:
        kind = e.get("kind")
        if kind == "spawn":
            spawned = True
        elif kind == "exit":
            break
        elif kind == "signal" or (kind == "terminate" and not _leftover(e)):
            return None
    return code if spawned else None


def client_ending(events: Iterable[dict[str, Any]]) -> tuple[float, str] | None:
    """How the recorded client ended the agent, when it did: the signal it sent (passed on
    by the proxy) and how many seconds after it closed the agent's stdin — editors close
    stdin, then SIGTERM a moment later. None when the agent ended by itself, or the proxy
    ended it after its grace."""
    eof: int | None = None
    for e in events:
        kind, t = e.get("kind"), e.get("t_ns")
        if not isinstance(t, int):
            continue
        if kind == "client_eof" and eof is None:
            eof = t
        elif kind == "signal":
            detail = _detail(e)
            name = detail.get("signal") if isinstance(detail, dict) else None
            if isinstance(name, str) and name.startswith("SIG"):
                return max(0.0, (t - (eof if eof is not None else t)) / 1e9), name
        elif kind == "exit":
            return None
    return None


def client_eof_ns(events: Iterable[dict[str, Any]]) -> int | None:
    """When the recorded client closed the agent's stdin (the ``client_eof`` event)."""
    for e in events:
        if e.get("kind") == "client_eof" and isinstance(e.get("t_ns"), int):
            return int(e["t_ns"])
    return None


def _detail(event: dict[str, Any]) -> Any:
    detail = event.get("detail")
    if isinstance(detail, str | bytes):
        try:
            return orjson.loads(detail)
        except orjson.JSONDecodeError:
            return None
    return detail


def _leftover(event: dict[str, Any]) -> bool:
    """Whether a ``terminate`` event ended what was left of the group after the agent
    exited (the agent's own exit code stands), rather than the agent itself."""
    detail = _detail(event)
    return isinstance(detail, dict) and "group" in detail

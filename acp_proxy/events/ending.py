"""Who ended a capture, and how: the one vocabulary of capture statuses (pure).

What belongs here: :func:`capture_ending`, read from a capture's row and its events. The
status a person reads says who ended it — the agent itself, the client (an editor's signal,
passed on), the proxy (the client had gone and the agent lingered past the grace), or the
peer of a connection — and how:

==========================  ===================================================================
``exit N``                  the agent exited by itself with status N
``died of SIGSEGV``         the agent died of a signal nobody in the capture sent it
``ended by client: SIGTERM`` the editor sent the signal; it was passed on to the agent's group
``ended by proxy: SIGTERM``  the client had closed stdin; the agent did not exit within the
                            grace, so the proxy ended it (SIGKILL when SIGTERM was not enough)
``proxy killed``            the proxy itself was killed (its agent went with it)
``closed``                  a connection (WebSocket, HTTP) ended normally
``upstream failed``         a remote agent could not be reached, or closed abnormally
``refused 401`` …           a connection that was never relayed
==========================  ===================================================================

A request left unanswered says something about the agent only when the agent ended the
capture itself (:attr:`CaptureEnd.blames_agent`): one cut short by the client or the proxy is no
peer's fault (``acp-proxy check`` notes it, it does not blame the agent).
"""

from __future__ import annotations

import signal as signals
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from acp_proxy.events.process import Signal, Terminate

__all__ = ["CaptureEnd", "capture_ending"]

_AGENT_PROCESS = ("stdio", "ws-stdio")  # transports where the agent is a process of ours


@dataclass(frozen=True, slots=True)
class CaptureEnd:
    """``by``: ``agent``, ``client``, ``proxy`` or ``peer``; ``status``: the short text a
    listing shows; ``why``: what it means for a request left unanswered."""

    by: str
    status: str
    why: str

    @property
    def blames_agent(self) -> bool:
        return self.by == "agent"


def _detail(ev: Mapping[str, Any]) -> Mapping[str, Any]:
    d = ev.get("detail")
    if isinstance(d, str | bytes):
        import orjson

        try:
            d = orjson.loads(d)
        except orjson.JSONDecodeError:
            return {}
    return d if isinstance(d, Mapping) else {}


def _signame(n: Any) -> str:
    try:
        return signals.Signals(int(n)).name
    except (TypeError, ValueError):
        return f"signal {n}"


def capture_ending(c: Mapping[str, Any], events: Iterable[Mapping[str, Any]]) -> CaptureEnd | None:
    """How capture ``c`` ended (None: nothing says yet — it may still be running)."""
    told: str | None = None  # the client's signal, passed on
    ended: str | None = None  # the proxy's, after the grace
    for ev in events:
        kind = ev.get("kind")
        if kind == Signal.kind and told is None:
            told = str(_detail(ev).get("signal") or "a signal")
        elif kind == Terminate.kind and "group" not in _detail(ev):
            ended = str(_detail(ev).get("signal") or "a signal")
    transport = str(c.get("transport") or "")
    if told is not None:
        return CaptureEnd("client", f"ended by client: {told}", f"the client ended it ({told})")
    if c.get("end_reason") == "proxy_gone":
        return CaptureEnd("proxy", "proxy killed", "the proxy was killed")
    if transport in _AGENT_PROCESS:
        return _agent_ending(c, ended)
    return _connection_ending(c)


def _agent_ending(c: Mapping[str, Any], ended: str | None) -> CaptureEnd | None:
    if ended is not None:
        return CaptureEnd("proxy", f"ended by proxy: {ended}",
                      f"the proxy ended the agent after the client left ({ended})")  # fmt: skip
    sig, code = c.get("exit_signal"), c.get("exit_code")
    if sig:
        name = _signame(sig)
        return CaptureEnd("agent", f"died of {name}", f"agent died of {name}")
    if code is not None:
        return CaptureEnd("agent", f"exit {code}", f"agent exited {code}")
    return None


def _connection_ending(c: Mapping[str, Any]) -> CaptureEnd | None:
    reason = c.get("end_reason")
    if reason not in (None, "closed", "not_recorded"):
        return CaptureEnd("peer", str(reason), str(reason))  # refused 401, upstream failed 502
    if c.get("transport") == "stdio-ws" and c.get("exit_code") == 4:
        return CaptureEnd("peer", "upstream failed", "the remote agent failed or went away")
    if reason == "closed" or c.get("ended_at") is not None:
        return CaptureEnd("peer", "closed", "the connection closed")
    return None

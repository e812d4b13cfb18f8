"""The prompt-turn checks: when a turn starts, what it may send, how it ends (pure, no I/O).

What belongs here: the life of a turn per session, in both versions — a ``session/prompt``
starts it (v1: never while another is in flight); in v1 its response ends it, and turn output
after that is late; in v2 the response only acknowledges it, and an idle ``state_update``
ends it (one never reached is reported at the end). History a ``session/load`` replays is no
turn's output. A ``session/cancel`` during a turn must
end it with the ``cancelled`` stop reason, soon (``timing.slow-cancel``); a refused prompt
starts no turn. Also what v2 requires of the output itself: a ``messageId`` on every message
update.
"""

from __future__ import annotations

from typing import Any

from acp_proxy.check.core.context import SEC, Context, Request, Session, sender
from acp_proxy.check.core.sessions import replaying
from acp_proxy.protocol.frames import Direction, Frame
from acp_proxy.protocol.jsonrpc import Info, Kind

__all__ = ["answer", "call", "finish", "update"]

_TURN_OUTPUT_V1 = frozenset(
    {"agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"}
)
_MESSAGE_UPDATES_V2 = frozenset(
    {
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
        "user_message",
        "agent_message",
        "agent_thought",
    }
)


def call(
    ctx: Context, frame: Frame, info: Info, s: Session, method: str, params: dict[str, Any]
) -> bool:
    """A prompt or a cancel on session ``s``; False when ``method`` is neither."""
    if method not in ("session/prompt", "session/cancel"):
        return False
    d = frame.direction
    if d is Direction.AGENT_TO_CLIENT:
        return True  # not a client's turn (schema.method said so)
    if method == "session/prompt" and info.kind == Kind.REQUEST:
        if ctx.version == 1 and s.prompt is not None:
            ctx.add(
                "turn.concurrent-prompt",
                sender(d),
                f"a second session/prompt on {params.get('sessionId')} "
                f"while frame {s.prompt.seq}'s is in flight",
                [s.prompt.seq],
            )
        s.prompt = Request(frame.seq, frame.t_ns, method, params, d)
        s.cancel = None
        s.idle_early = False
    elif method == "session/cancel" and (s.prompt is not None or s.turn_open is not None):
        s.cancel = Request(frame.seq, frame.t_ns, method, params, d)
    return True


def update(
    ctx: Context, frame: Frame, s: Session, sid: str, kind: str, u: dict[str, Any], side: str
) -> None:
    """A ``session/update`` of ``kind``: late turn output (v1), a message without its id and
    the idle state that ends a turn (v2)."""
    if ctx.version == 1:
        if kind in _TURN_OUTPUT_V1 and s.prompt is None and s.turns > 0 and not replaying(s):
            ctx.add(
                "turn.update-after-turn",
                side,
                f"{kind} for session {sid} after its prompt turn ended",
            )
        return
    if kind in _MESSAGE_UPDATES_V2:
        mid = u.get("messageId")
        if not isinstance(mid, str) or not mid:
            ctx.add("v2.message-id", side, f"{kind} without messageId")
    elif kind == "state_update":
        state = u.get("state")
        if state == "idle" and (s.turn_open is not None or s.prompt is not None):
            cancel = s.cancel
            if cancel is not None:
                _cancel_outcome(ctx, frame, cancel, u.get("stopReason"), side)
            if s.turn_open is None:
                s.idle_early = True  # ended before the acknowledgement reached us
            s.turn_open = None
            s.cancel = None


def answer(
    ctx: Context, frame: Frame, req: Request, result: dict[str, Any], is_error: bool, side: str
) -> None:
    """The answer to a ``session/prompt``: the end of a v1 turn, the acknowledgement of a
    v2 one; a refusal starts no turn, in either version."""
    if req.method != "session/prompt":
        return
    s = ctx.session(req.params.get("sessionId"))
    if s is None:
        return
    if is_error:
        if s.cancel is not None:
            _cancel_outcome(ctx, frame, s.cancel, None, side)
        _end_turn_v1(s)
    elif ctx.version == 1:
        if s.cancel is not None:
            _cancel_outcome(ctx, frame, s.cancel, result.get("stopReason"), side)
        _end_turn_v1(s)
    else:
        s.prompt = None
        if not s.idle_early:
            s.turn_open = req
        s.idle_early = False


def finish(ctx: Context) -> None:
    """The v2 turns that never went idle."""
    for sid, s in ctx.sessions.items():
        if s.turn_open is not None:
            ctx.at(s.turn_open.seq)
            ctx.add(
                "v2.turn-unfinished", "agent", f"the turn of session {sid} never reached state idle"
            )


def _end_turn_v1(s: Session) -> None:
    s.prompt = None
    s.cancel = None
    s.turns += 1


def _cancel_outcome(ctx: Context, frame: Frame, cancel: Request, stop: Any, side: str) -> None:
    if stop != "cancelled":
        ctx.add(
            "turn.cancel-not-honoured",
            side,
            f"the turn cancelled at frame {cancel.seq} ended with stop reason "
            f"{stop!r}, not 'cancelled'",
            [cancel.seq],
        )
    waited = (frame.t_ns - cancel.t_ns) / SEC
    if waited > ctx.thresholds.slow_cancel:
        ctx.add(
            "timing.slow-cancel",
            side,
            f"the cancel at frame {cancel.seq} took {waited:.1f} s",
            [cancel.seq],
        )

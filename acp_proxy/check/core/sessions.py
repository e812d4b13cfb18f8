"""The checks of child sessions, history replays and retried prompts (pure, no I/O).

What belongs here: the MUSTs of docs/protocol.md §13 —

* subagents: the ``subagent_update`` that announces a child comes before any traffic that
  names the child (its updates, requests, messages naming it, ``session`` content); a v1
  agent sends subagent updates only to a client that advertised ``subagents``. The child is
  a known session from its announcement on. The client sends ``session/cancel`` for a child
  only when the child advertises ``capabilities.cancel`` (its latest ``subagent_update``
  that names ``capabilities`` says, ``null`` clearing them).
* replays (v2): ``replay_complete`` on a session exactly once per ``session/resume`` with
  ``replayFrom``, before its response, never without one; no live traffic on the session
  (a ``state_update``, a request to the client) once the replay has begun, until its marker;
  a replay that ends with neither marker nor success is truncated. A child announced during
  the replay gets its own marker. v1 ``session/load`` replays too: its updates are history,
  never late turn output (:mod:`acp_proxy.check.core.turns` asks :func:`replaying`).
* retries (v2): a ``session/prompt`` that resends an ``idempotencyKey`` is answered with the
  ``messageId`` the first attempt got.
"""

from __future__ import annotations

from typing import Any

from acp_proxy.check.core.context import Context, Request, Session, as_dict
from acp_proxy.protocol.frames import Frame

__all__ = ["announce_check", "answer", "call", "finish", "replaying", "update"]

_TREE = frozenset({"subagent_update", "session_message", "session_message_chunk"})
_LIVE = frozenset({"state_update"})


def replaying(s: Session) -> bool:
    return s.replay is not None or s.replay_parent is not None


def announce_check(ctx: Context, sid: Any) -> None:
    """A frame names session ``sid``: remember it if no session has that id yet."""
    unknown = isinstance(sid, str) and sid not in ctx.sessions and sid not in ctx.unannounced
    if unknown and len(ctx.unannounced) < 4096:  # ids come from peers: bounded
        ctx.unannounced[sid] = ctx.seq


def call(ctx: Context, frame: Frame, s: Session, method: str, params: dict[str, Any]) -> None:
    """A request or notification on session ``s``: a replay starting, a retried prompt,
    a live request during a replay."""
    d = frame.direction
    child = params.get("sessionId")
    on_child = method == "session/cancel" and d.value == "c2a" and str(child) in ctx.children
    if on_child and not isinstance(as_dict(ctx.child_caps.get(str(child))).get("cancel"), dict):
        what = f"session/cancel for child session {child}, which does not advertise cancel"
        ctx.add("subagent.cancel-capability", "client", what)
    if method in ("session/load", "session/resume") and d.value == "c2a":
        if method == "session/load" or params.get("replayFrom") is not None:
            s.replay = Request(frame.seq, frame.t_ns, method, params, d)
            s.replay_updates = 0
            s.markers = 0
    elif (
        d.value == "a2c"
        and method != "session/update"
        and s.replay is not None
        and ctx.version == 2
        and s.replay_updates  # requests are live by nature
    ):
        ctx.add("v2.live-in-replay", "agent", f"{method} during the history replay")


def update(ctx: Context, sid: str, s: Session, kind: str, u: dict[str, Any], side: str) -> None:
    """A ``session/update`` of ``kind`` on ``sid``."""
    tree = kind in _TREE or _links_session(u)
    if tree and ctx.version == 1 and not isinstance(ctx.client_caps.get("subagents"), dict):
        ctx.add("subagent.not-advertised", side, f"{kind} to a client without subagents")
    if kind == "subagent_update":
        _announce(ctx, sid, s, u.get("sessionId"))
        if "capabilities" in u and ctx.children.get(str(u.get("sessionId"))) == sid:
            ctx.child_caps[u["sessionId"]] = u["capabilities"]
    elif kind == "session_message" and not replaying(s):
        for key in ("senderSessionId", "recipientSessionId"):
            announce_check(ctx, u.get(key))
    content = u.get("content")
    for item in content if isinstance(content, list) else ():
        if as_dict(item).get("type") == "session":
            announce_check(ctx, as_dict(item).get("sessionId"))
    if kind == "replay_complete":
        _marker(ctx, sid, s)
    elif replaying(s):
        s.replay_updates += 1
        if kind in _LIVE and ctx.version == 2 and s.replay is not None and s.replay_updates > 1:
            ctx.add("v2.live-in-replay", side, f"{kind} on {sid} during its history replay")


def _links_session(u: dict[str, Any]) -> bool:
    content = u.get("content")
    return isinstance(content, list) and any(
        as_dict(item).get("type") == "session" for item in content
    )


def _announce(ctx: Context, parent: str, s: Session, child: Any) -> None:
    if not isinstance(child, str):
        return
    if child in ctx.children:  # already announced: a replay announces it again
        c = ctx.sessions.get(child)
        if c is not None and replaying(s):
            c.replay_parent = parent
        return
    ctx.children[child] = parent
    first = ctx.unannounced.pop(child, None)
    if first is not None:
        ctx.add(
            "subagent.announced-late",
            "agent",
            f"session {child} was named at frame {first} before this subagent_update",
            [first],
        )
    c = ctx.sessions.setdefault(child, Session())
    if replaying(s):
        c.replay_parent = parent


def _marker(ctx: Context, sid: str, s: Session) -> None:
    if s.replay_parent is not None:  # a child's own marker ends its part of the replay
        s.replay_parent = None
        return
    if ctx.version != 2:
        return
    if s.replay is None or s.replay.method != "session/resume":
        ctx.add("v2.replay-complete", "agent", f"replay_complete on {sid} with no replay asked")
        return
    s.markers += 1
    if s.markers > 1:
        ctx.add("v2.replay-complete", "agent", f"a second replay_complete on {sid}", [s.replay.seq])


def answer(ctx: Context, req: Request, result: dict[str, Any], is_error: bool) -> None:
    """The answer to a replaying request (its end) or to a retried prompt."""
    s = ctx.session(req.params.get("sessionId"))
    if s is None:
        return
    if req.method in ("session/load", "session/resume") and s.replay is not None:
        if s.replay.seq != req.seq:
            return
        if ctx.version == 2 and req.method == "session/resume":
            if not s.markers and not is_error:
                ctx.add(
                    "v2.replay-complete",
                    "agent",
                    "the response to a session/resume with replayFrom came before replay_complete",
                    [req.seq],
                )
            elif not s.markers:
                ctx.add("v2.replay-truncated", "agent", "the replay failed before its marker")
        s.replay = None
        for c in ctx.sessions.values():
            c.replay_parent = None
    elif req.method == "session/prompt" and ctx.version == 2 and not is_error:
        key = req.params.get("idempotencyKey")
        if isinstance(key, str):
            mid = result.get("messageId")
            if key not in s.keys:
                s.keys[key] = mid
            elif s.keys[key] != mid:
                ctx.add(
                    "v2.retry-message-id",
                    "agent",
                    f"the retry of idempotencyKey {key!r} got messageId {mid!r}, "
                    f"not {s.keys[key]!r}",
                    [req.seq],
                )


def finish(ctx: Context) -> None:
    """Replays still running when the capture ended."""
    for sid, s in ctx.sessions.items():
        if s.replay is not None and s.replay.method == "session/resume" and not s.markers:
            ctx.at(s.replay.seq)
            ctx.add("v2.replay-truncated", "agent", f"the replay of {sid} never ended")

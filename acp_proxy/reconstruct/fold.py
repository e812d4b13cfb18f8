"""The fold: frames in, reconstructed state out (pure, no I/O).

What belongs here: :class:`Reconstruction`, which takes frames in ``seq`` order and routes
each message to the records of ``tools``, ``terminals``, ``files`` and ``session``; and
:func:`reconstruct`, which folds a whole capture or stops at a given ``seq`` ("the state at
a point in the capture"). The protocol version comes from the capture's ``initialize``
(the agent's answer, else the client's request; docs/protocol.md §3); it selects the v1 or v2
reading where the wire shapes alone do not (``null`` in tool call updates, the end of a
turn, who owns a terminal).
"""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Iterable
from typing import Any

import orjson

from acp_proxy.protocol.frames import Direction, Frame
from acp_proxy.protocol.jsonrpc import id_token
from acp_proxy.reconstruct.files import FileChange, Files
from acp_proxy.reconstruct.session import Change, Permission, SessionState, Turn
from acp_proxy.reconstruct.terminals import Terminal, TerminalEvent
from acp_proxy.reconstruct.tools import (
    StatusChange,
    ToolCall,
    apply_content_chunk,
    apply_v1,
    apply_v2,
)
from acp_proxy.reconstruct.wire import Message, Pairer

__all__ = ["Reconstruction", "reconstruct"]

OUTPUT_UPDATES = frozenset(
    {
        "agent_message_chunk",
        "agent_thought_chunk",
        "agent_message",
        "agent_thought",
        "tool_call",
        "tool_call_update",
        "tool_call_content_chunk",
        "plan",
        "plan_update",
        "terminal_update",
        "terminal_output_chunk",
    }
)
"""Updates that count as the agent's first visible output in a turn."""

_C2A = Direction.CLIENT_TO_AGENT


def reconstruct(frames: Iterable[Frame], *, at: int | None = None) -> Reconstruction:
    """Fold ``frames`` (in ``seq`` order); with ``at``, stop after the frame numbered ``at``.

    The cyclic garbage collector is paused meanwhile: the fold allocates millions of small
    containers and makes no cycles, and on a large capture repeated collections of the
    growing heap cost a fifth of the time or more (``bench/bench_reconstruct.py``).
    """
    r = Reconstruction()
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        for frame in frames:
            if at is not None and frame.seq > at:
                break
            r.feed(frame)
    finally:
        if paused:
            gc.enable()
    return r


def _key(m: Message) -> tuple[int, str | None]:
    return (m.seq, m.id)


class Reconstruction:
    """Everything a client showed, rebuilt from the recorded frames folded so far."""

    def __init__(self) -> None:
        self.protocol_version: int | None = None
        self.client_info: Any = None
        self.agent_info: Any = None
        self.frames = 0
        self.last_seq = -1
        self.sessions: dict[str, SessionState] = {}
        self.tool_calls: dict[tuple[str, str], ToolCall] = {}
        self.terminals: dict[tuple[str, str], Terminal] = {}
        self.files = Files()
        self.permissions: list[Permission] = []
        self.turns: list[Turn] = []
        self._pairer = Pairer()
        self._open: dict[str, Turn] = {}
        self._by_request: dict[tuple[int, str | None], Any] = {}
        self._diffs_seen: set[tuple[str, str, bytes]] = set()
        self._replaying: set[str] = set()

    @property
    def v2(self) -> bool:
        return (self.protocol_version or 1) >= 2

    # -- driving ------------------------------------------------------------------------

    def feed(self, frame: Frame) -> None:
        self.frames += 1
        self.last_seq = frame.seq
        for m in self._pairer.messages(frame):
            if m.kind in ("request", "notification"):
                self._request(m)
            else:
                self._response(m)

    def session(self, sid: str, m: Message) -> SessionState:
        s = self.sessions.get(sid)
        if s is None:
            s = self.sessions[sid] = SessionState(sid, m.seq, m.t_ns)
        return s

    def _request(self, m: Message) -> None:
        method = m.method or ""
        p = m.params
        if method == "session/update":
            self._update(m, p)
        elif method == "initialize":
            v = p.get("protocolVersion")
            if isinstance(v, int) and self.protocol_version is None:
                self.protocol_version = v
            self.client_info = p.get("clientInfo") or p.get("info")
        elif method == "session/prompt" and m.direction is _C2A:
            self._prompt(m, p)
        elif method == "session/cancel":
            turn = self._open.get(str(p.get("sessionId")))
            if turn is not None and turn.cancel_seq is None:
                turn.cancel_seq, turn.cancel_t_ns = m.seq, m.t_ns
        elif method == "session/request_permission":
            self._permission(m, p)
        elif method == "fs/write_text_file":
            sid = m.session_id
            cwd = self.sessions[sid].cwd if sid in self.sessions else None
            change = self.files.write(p, sid, m.seq, m.t_ns, cwd)
            if change is not None:
                self._by_request[_key(m)] = change
        elif method in ("terminal/kill", "terminal/release", "terminal/cancel"):
            t = self._terminal(m.session_id, p.get("terminalId"), m)
            if t is not None:
                what = method.split("/")[1]
                t.events.append(TerminalEvent(m.seq, m.t_ns, what))
                t.killed = t.killed or what == "kill"
                t.released = t.released or what == "release"
        elif method == "tool_call/cancel":
            tc = self.tool_calls.get((str(m.session_id), str(p.get("toolCallId"))))
            if tc is not None:
                tc.cancel_requested_seq = m.seq
        elif method == "$/cancel_request" and "requestId" in p:
            req = self._pairer.pending(m.direction, id_token(p["requestId"]))
            target = self._by_request.get(_key(req)) if req is not None else None
            if isinstance(target, Permission) and target.cancel_requested_seq is None:
                target.cancel_requested_seq = m.seq
        elif method in ("session/load", "session/resume") and isinstance(p.get("sessionId"), str):
            s = self.session(p["sessionId"], m)
            if isinstance(p.get("cwd"), str):
                s.cwd = p["cwd"]
            # v1 session/load and v2 session/resume with replayFrom replay the history as
            # session/update before answering (§4.1, §4.3, §12.3)
            if method == "session/load" or p.get("replayFrom") is not None:
                self._replaying.add(p["sessionId"])

    def _response(self, m: Message) -> None:
        req = m.request
        if req is None:
            return
        method = req.method or ""
        ok = m.kind == "response"
        result = m.result
        r = result if isinstance(result, dict) else {}
        if method == "initialize":
            v = r.get("protocolVersion")
            if isinstance(v, int):
                self.protocol_version = v
            self.agent_info = r.get("agentInfo") or r.get("info")
        elif method in ("session/new", "session/fork", "session/load", "session/resume"):
            sid = r.get("sessionId", req.params.get("sessionId"))
            self._replaying.discard(str(req.params.get("sessionId")))
            if ok and isinstance(sid, str):
                s = self.session(sid, m)
                cwd = req.params.get("cwd")
                s.cwd = cwd if isinstance(cwd, str) else s.cwd
                modes = r.get("modes")
                if isinstance(modes, dict):
                    s.modes = modes.get("availableModes")
                    s.set_mode(modes.get("currentModeId"), m.seq, m.t_ns, "agent")
                s.set_config(r.get("configOptions"), m.seq, m.t_ns, "agent")
        elif method == "session/prompt":
            turn = self._by_request.pop(_key(req), None)
            if isinstance(turn, Turn):
                self._prompt_answered(turn, m, r)
        elif method == "session/request_permission":
            perm = self._by_request.pop(_key(req), None)
            if isinstance(perm, Permission):
                perm.answer(result, m.body.get("error"), m.seq, m.t_ns)
        elif method == "fs/read_text_file" and ok:
            self.files.read(req.params, result, req.session_id, m.seq, m.t_ns)
        elif method == "fs/write_text_file":
            change = self._by_request.pop(_key(req), None)
            if isinstance(change, FileChange):
                if ok:
                    self.files.write_done(change)
                else:
                    self.files.write_failed(change, m.seq)
        elif method == "terminal/create" and ok:
            t = self._terminal(req.session_id, r.get("terminalId"), m, owner="client")
            if t is not None:
                t.apply_create(req.params, m.seq, m.t_ns)
        elif method == "terminal/output" and ok:
            t = self._terminal(req.session_id, req.params.get("terminalId"), m, owner="client")
            if t is not None:
                t.apply_output(r, m.seq, m.t_ns)
        elif method == "terminal/wait_for_exit" and ok:
            t = self._terminal(req.session_id, req.params.get("terminalId"), m, owner="client")
            if t is not None:
                t.apply_exit(r, m.seq, m.t_ns)
        elif method == "session/set_mode" and ok:
            sid = req.session_id
            if sid is not None:
                self.session(sid, m).set_mode(req.params.get("modeId"), m.seq, m.t_ns, "client")
        elif method == "session/set_config_option" and ok:
            sid = req.session_id
            if sid is not None:
                s = self.session(sid, m)
                s.set_config(r.get("configOptions"), m.seq, m.t_ns, "client")

    # -- turns (§6.2) -------------------------------------------------------------------

    def _prompt(self, m: Message, p: dict[str, Any]) -> None:
        sid = p.get("sessionId")
        sid = sid if isinstance(sid, str) else None
        turn = Turn(sid, len(self.turns), m.id, m.seq, m.t_ns, p.get("prompt"))
        self.turns.append(turn)
        self._by_request[_key(m)] = turn
        if sid is not None:
            self._open[sid] = turn

    def _prompt_answered(self, turn: Turn, m: Message, r: dict[str, Any]) -> None:
        """v1: the response ends the turn. v2: it acknowledges (``messageId``); ``idle``
        ends it — unless it is an error, after which no idle follows."""
        error = m.body.get("error") if m.kind == "error" else None
        if self.v2 and error is None:
            turn.acked_seq = m.seq
            turn.message_id = r.get("messageId")
            return
        if turn.open:
            turn.end(m.seq, m.t_ns, r.get("stopReason"), error)
        if turn.session_id is not None and self._open.get(turn.session_id) is turn:
            del self._open[turn.session_id]

    # -- session/update (§5) ------------------------------------------------------------

    def _update(self, m: Message, p: dict[str, Any]) -> None:
        u = p.get("update")
        if not isinstance(u, dict):
            return
        sid = p.get("sessionId")
        sid = sid if isinstance(sid, str) else ""
        kind = u.get("sessionUpdate")
        turn = self._open.get(sid)
        if turn is not None:
            turn.updates += 1
            if turn.first_output_seq is None and kind in OUTPUT_UPDATES:
                turn.first_output_seq, turn.first_output_t_ns = m.seq, m.t_ns
        s = self.session(sid, m)
        seq, t = m.seq, m.t_ns
        if kind in ("tool_call", "tool_call_update", "tool_call_content_chunk"):
            self._tool(sid, kind, u, m, turn)
        elif kind == "terminal_update":
            term = self._terminal(sid, u.get("terminalId"), m, owner="agent")
            if term is not None:
                term.apply_update(u, seq, t)
        elif kind == "terminal_output_chunk":
            term = self._terminal(sid, u.get("terminalId"), m, owner="agent")
            if term is not None:
                term.apply_chunk(u, seq, t)
        elif kind in ("agent_message_chunk", "agent_thought_chunk"):
            if turn is not None:
                role = "agent" if kind == "agent_message_chunk" else "thought"
                turn.chunk(role, u.get("messageId"), u.get("content"))
        elif kind in ("agent_message", "agent_thought"):
            if turn is not None:
                turn.upsert(
                    "agent" if kind == "agent_message" else "thought", u.get("messageId"), u
                )
        elif kind == "plan":
            s.set_plan_v1(u.get("entries"), seq, t)
        elif kind == "plan_update":
            s.set_plan_v2(u.get("plan"), seq, t)
        elif kind == "plan_removed":
            s.remove_plan(u.get("planId"), seq, t)
        elif kind == "current_mode_update":
            s.set_mode(u.get("currentModeId"), seq, t, "agent")
        elif kind == "config_option_update":
            s.set_config(u.get("configOptions"), seq, t, "agent")
        elif kind == "usage_update":
            s.usage = {k: v for k, v in u.items() if k != "sessionUpdate"}
            s.usage_history.append(Change(seq, t, s.usage))
        elif kind == "session_info_update":
            if "title" in u:
                s.title = u["title"]
        elif kind == "available_commands_update":
            s.commands = u.get("availableCommands")
        elif kind == "notice":
            s.notices.append(Change(seq, t, u))
        elif kind == "state_update":
            self._state(s, u, m)
        elif kind not in ("user_message_chunk", "user_message"):
            name = str(kind)
            s.unknown_updates[name] = s.unknown_updates.get(name, 0) + 1

    def _state(self, s: SessionState, u: dict[str, Any], m: Message) -> None:
        """v2 ``state_update``; ``idle`` ends the open turn with its ``stopReason`` (§6.2)."""
        state = u.get("state")
        s.state = state if isinstance(state, str) else None
        s.state_history.append(Change(m.seq, m.t_ns, {k: v for k, v in u.items()}))
        turn = self._open.get(s.session_id)
        if state == "idle" and turn is not None:
            turn.end(m.seq, m.t_ns, u.get("stopReason"), u.get("error"))
            del self._open[s.session_id]

    # -- tool calls (§6.1) --------------------------------------------------------------

    def _tool(self, sid: str, kind: str, u: dict[str, Any], m: Message, turn: Turn | None) -> None:
        tcid = u.get("toolCallId")
        if not isinstance(tcid, str):
            return
        tc = self.tool_calls.get((sid, tcid))
        if tc is None:
            tc = self.tool_calls[(sid, tcid)] = ToolCall(sid, tcid, m.seq, m.t_ns)
            tc.replayed = sid in self._replaying
            if kind != "tool_call":  # a new id starts as pending (§6.1)
                tc.status_history.append(StatusChange("pending", m.seq, m.t_ns))
            if kind == "tool_call_update" and not self.v2:
                tc.anomalies.append("update_before_tool_call")
            if turn is not None:
                turn.tool_call_ids.append(tcid)
        before = tc.content
        if kind == "tool_call_content_chunk":
            self._content(tc, [apply_content_chunk(tc, u, m.seq, m.t_ns)], m)
            return
        if kind == "tool_call":
            apply_v1(tc, u, m.seq, m.t_ns, create=True)
        elif self.v2:
            apply_v2(tc, u, m.seq, m.t_ns)
        else:
            apply_v1(tc, u, m.seq, m.t_ns, create=False)
        if tc.content is not before:
            self._content(tc, tc.content, m)

    def _content(self, tc: ToolCall, items: list[Any], m: Message) -> None:
        """Link terminal anchors and record diffs found in tool call content (§6.3)."""
        for item in items:
            if not isinstance(item, dict):
                continue
            t = item.get("type")
            if t == "terminal":
                term = self._terminal(tc.session_id, item.get("terminalId"), m)
                if term is None:
                    continue
                if tc.tool_call_id not in term.tool_call_ids:
                    term.tool_call_ids.append(tc.tool_call_id)
                    term.events.append(
                        TerminalEvent(m.seq, m.t_ns, "anchor", detail=tc.tool_call_id)
                    )
                if term.terminal_id not in tc.terminal_ids:
                    tc.terminal_ids.append(term.terminal_id)
            elif t == "diff":
                # a digest, not the diff itself: a capture repeats its diffs in every
                # update of the tool call, and keeping each text twice doubles the memory
                dumped = orjson.dumps(item, option=orjson.OPT_SORT_KEYS)
                key = (tc.session_id, tc.tool_call_id, hashlib.blake2b(dumped).digest())
                if key in self._diffs_seen:
                    continue
                self._diffs_seen.add(key)
                s = self.sessions.get(tc.session_id)
                cwd = s.cwd if s is not None else None
                if "changes" in item:
                    self.files.v2_diff(item, tc.session_id, tc.tool_call_id, m.seq, m.t_ns)
                else:
                    self.files.v1_diff(item, tc.session_id, tc.tool_call_id, m.seq, m.t_ns, cwd)

    # -- permissions (§6.4) -------------------------------------------------------------

    def _permission(self, m: Message, p: dict[str, Any]) -> None:
        sid = m.session_id
        tool_call = p.get("toolCall") if isinstance(p.get("toolCall"), dict) else None
        subject = p.get("subject") if isinstance(p.get("subject"), dict) else None
        tcid = None
        inner = tool_call
        if subject is not None:
            tcid = subject.get("toolCallId")
            if isinstance(subject.get("toolCall"), dict):
                inner = subject["toolCall"]
        if inner is not None and isinstance(inner.get("toolCallId"), str):
            tcid = inner["toolCallId"]
            tc = self.tool_calls.get((sid or "", tcid))
            if tc is None:
                tc = self.tool_calls[(sid or "", tcid)] = ToolCall(sid or "", tcid, m.seq, m.t_ns)
                tc.status_history.append(StatusChange("pending", m.seq, m.t_ns))
                turn = self._open.get(sid or "")
                if turn is not None:
                    turn.tool_call_ids.append(tcid)
            if self.v2:
                apply_v2(tc, inner, m.seq, m.t_ns)
            else:
                apply_v1(tc, inner, m.seq, m.t_ns, create=False)
        title = p.get("title")
        if not isinstance(title, str):
            title = inner.get("title") if inner is not None else None
            if not isinstance(title, str) and isinstance(tcid, str):
                known = self.tool_calls.get((sid or "", tcid))
                title = known.title if known is not None else None
        options = p.get("options")
        perm = Permission(
            sid,
            m.id,
            m.seq,
            m.t_ns,
            title if isinstance(title, str) else None,
            tcid if isinstance(tcid, str) else None,
            list(options) if isinstance(options, list) else [],
            description=p.get("description"),
            subject=subject,
            tool_call=tool_call,
            meta=p.get("_meta"),
        )
        self.permissions.append(perm)
        self._by_request[_key(m)] = perm
        turn = self._open.get(sid or "")
        if turn is not None:
            turn.permissions.append(perm)

    # -- terminals (§6.3) ---------------------------------------------------------------

    def _terminal(
        self, sid: str | None, tid: Any, m: Message, owner: str | None = None
    ) -> Terminal | None:
        if not isinstance(tid, str):
            return None
        key = (sid or "", tid)
        t = self.terminals.get(key)
        if t is None:
            who = owner or ("agent" if self.v2 else "client")
            t = self.terminals[key] = Terminal(sid or "", tid, who, m.seq, m.t_ns)
            t.replayed = key[0] in self._replaying
        return t

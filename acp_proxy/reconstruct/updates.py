"""The state a reconstruction keeps, and how ``session/update`` changes it (pure, no I/O).

What belongs here: :class:`Fold`, the records folded so far (sessions, tool calls,
terminals, files, permissions, turns) and the routing of each ``session/update``
(docs/protocol.md §5) to them: tool calls (§6.1) and what their content links — terminal
anchors and diffs (§6.3) —, terminals' own updates, message chunks, plans, modes, usage and
state. Requests, responses and turns are :mod:`acp_proxy.reconstruct.fold`'s.

``parts`` says which records are kept (all of them unless told): a view that shows only
terminals need not keep tool calls, which are then folded one update at a time (what an
update's content links depends on that update alone). Every lookup of a tool call or a
terminal goes through :meth:`Fold._find_tool_call` and :meth:`Fold._find_terminal`, and
every new one through ``_add_*``: the streaming views (:mod:`acp_proxy.reconstruct.stream`)
hook there to write out items that can no longer change.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from acp_proxy.reconstruct.counting import Counting
from acp_proxy.reconstruct.files import Files
from acp_proxy.reconstruct.history import Replay
from acp_proxy.reconstruct.kinds import (
    CHUNKS,
    EVERYTHING,
    FILES,
    OUTPUT_UPDATES,
    SESSIONS,
    TERMINALS,
    TOOL_UPDATES,
    TOOLS,
    role_of,
)
from acp_proxy.reconstruct.kinds import KNOWN_ELSEWHERE as _KNOWN_ELSEWHERE
from acp_proxy.reconstruct.kinds import TREE_UPDATES as _TREE_UPDATES
from acp_proxy.reconstruct.mcp import McpCalls
from acp_proxy.reconstruct.session import Change, Permission, SessionState, Turn
from acp_proxy.reconstruct.subagents import SessionMessage, Subagent
from acp_proxy.reconstruct.terminals import Terminal, TerminalEvent
from acp_proxy.reconstruct.tools import (
    StatusChange,
    ToolCall,
    apply_content_chunk,
    apply_v1,
    apply_v2,
)
from acp_proxy.reconstruct.wire import RpcMessage

__all__ = [
    "CHUNKS",
    "EVERYTHING",
    "FILES",
    "OUTPUT_UPDATES",
    "SESSIONS",
    "TERMINALS",
    "TOOLS",
    "TOOL_UPDATES",
    "Fold",
    "Key",
]

Key = tuple[str, str]


class Fold(Counting):
    """Everything a client showed, as far as the frames folded so far tell."""

    def __init__(self, parts: frozenset[str] = EVERYTHING, *, timelines: bool = True) -> None:
        """``timelines``: keep each file's versions (see :class:`Files`)."""
        self.parts = parts
        self.protocol_version: int | None = None
        self.client_info: Any = None
        self.agent_info: Any = None
        self.frames = 0
        self.last_seq = -1
        self.sessions: dict[str, SessionState] = {}
        self.tool_calls: dict[Key, ToolCall] = {}
        self.terminals: dict[Key, Terminal] = {}
        self.files = Files(timelines=timelines)
        self.permissions: list[Permission] = []
        self.turns: list[Turn] = []
        self._open: dict[str, Turn] = {}
        self._by_request: dict[tuple[int, str | None], Any] = {}
        self._diffs_seen: set[tuple[str, str, bytes]] = set()
        self._replaying: dict[str, Replay] = {}  # session -> the replay it is in
        self.replays: list[Replay] = []
        self.subagents: dict[str, Subagent] = {}  # child session -> what its parent said
        self.session_messages: dict[tuple[str, str], SessionMessage] = {}
        self.mcp = McpCalls()
        self._keep_sessions = SESSIONS in parts
        self._keep_tools = TOOLS in parts or self._keep_sessions  # turns list their tools
        self._keep_terminals = TERMINALS in parts
        self._keep_files = FILES in parts

    @property
    def v2(self) -> bool:
        return (self.protocol_version or 1) >= 2

    def session(self, sid: str, m: RpcMessage) -> SessionState:
        s = self.sessions.get(sid)
        if s is None:
            s = self.sessions[sid] = SessionState(sid, m.seq, m.t_ns)
        return s

    # -- where tool calls and terminals are found and added (hooks) ----------------------

    def _find_tool_call(self, key: Key) -> ToolCall | None:
        return self.tool_calls.get(key)

    def _add_tool_call(self, key: Key, tc: ToolCall) -> None:
        self.tool_calls[key] = tc

    def _find_terminal(self, key: Key) -> Terminal | None:
        return self.terminals.get(key)

    def _add_terminal(self, key: Key, t: Terminal) -> None:
        self.terminals[key] = t

    # -- session/update (§5) ------------------------------------------------------------

    def _update(self, m: RpcMessage, p: dict[str, Any]) -> None:
        u = p.get("update")
        if not isinstance(u, dict):
            return
        sid = p.get("sessionId")
        sid = sid if isinstance(sid, str) else ""
        kind = u.get("sessionUpdate")
        replay = self._replaying.get(sid)
        turn = self._open.get(sid) if replay is None else None  # history is no turn's
        if replay is not None:
            replay.updates += 1
        if kind in _TREE_UPDATES:
            self._tree(sid, kind, u, m, replay)
        if turn is not None:
            turn.updates += 1
            if turn.first_output_seq is None and kind in OUTPUT_UPDATES:
                turn.first_output_seq, turn.first_output_t_ns = m.seq, m.t_ns
        s = self.session(sid, m) if self._keep_sessions else None
        if s is not None and replay is not None:
            s.history += 1
        if kind in TOOL_UPDATES:
            self._tool(sid, kind, u, m, turn)
        elif kind == "terminal_update":
            if self._keep_terminals:
                term = self._terminal(sid, u.get("terminalId"), m, owner="agent")
                if term is not None:
                    term.apply_update(u, m.seq, m.t_ns)
        elif kind == "terminal_output_chunk":
            if self._keep_terminals:
                term = self._terminal(sid, u.get("terminalId"), m, "agent")
                if term is not None:
                    term.apply_chunk(u, m.seq, m.t_ns)
        elif s is not None:
            self._session_update(s, kind, u, m, turn)

    def _session_update(
        self, s: SessionState, kind: Any, u: dict[str, Any], m: RpcMessage, turn: Turn | None
    ) -> None:
        seq, t = m.seq, m.t_ns
        if kind in ("agent_message_chunk", "agent_thought_chunk"):
            if turn is not None:
                turn.chunk(role_of(kind), u.get("messageId"), u.get("content"))
        elif kind in ("agent_message", "agent_thought"):
            if turn is not None:
                turn.upsert(role_of(kind), u.get("messageId"), u)
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
        elif kind not in _KNOWN_ELSEWHERE:
            name = str(kind)
            s.unknown_updates[name] = s.unknown_updates.get(name, 0) + 1

    def _state(self, s: SessionState, u: dict[str, Any], m: RpcMessage) -> None:
        """v2 ``state_update``; ``idle`` ends the open turn with its ``stopReason`` (§6.2)."""
        state = u.get("state")
        s.state = state if isinstance(state, str) else None
        s.state_history.append(Change(m.seq, m.t_ns, {k: v for k, v in u.items()}))
        turn = self._open.get(s.session_id)
        if state == "idle" and turn is not None:
            turn.end(m.seq, m.t_ns, u.get("stopReason"), u.get("error"))
            del self._open[s.session_id]

    # -- subagents, messages between sessions, replay markers (§13.1, §13.2) -------------

    def _tree(
        self, sid: str, kind: str, u: dict[str, Any], m: RpcMessage, replay: Replay | None
    ) -> None:
        if kind == "replay_complete":
            if replay is not None:
                if sid == replay.session_id:  # a child's own marker ends only its part
                    replay.marker_seqs.append(m.seq)
                del self._replaying[sid]
            return
        if kind == "subagent_update":
            child = u.get("sessionId")
            if not isinstance(child, str):
                return
            sub = self.subagents.get(child)
            if sub is None:  # the first one announces the child; it never moves
                sub = self.subagents[child] = Subagent(child, sid, m.seq, m.t_ns)
                sub.replayed = replay is not None
            if replay is not None and child not in self._replaying:
                self._replaying[child] = replay  # its history, until its own marker
                replay.children.append(child)
            sub.apply(u)
            return
        mid = u.get("messageId")
        if not isinstance(mid, str):
            return
        msg = self.session_messages.get((sid, mid))
        if msg is None:
            msg = self.session_messages[(sid, mid)] = SessionMessage(sid, mid, m.seq, m.t_ns)
            msg.replayed = replay is not None
        if kind == "session_message":
            msg.upsert(u, m.seq)
        else:
            msg.chunk(u, m.seq)

    # -- tool calls (§6.1) --------------------------------------------------------------

    def _new_tool_call(self, sid: str, tcid: str, m: RpcMessage) -> ToolCall:
        """A tool call first seen at ``m``; kept unless this fold keeps no tool calls."""
        tc = ToolCall(sid, tcid, m.seq, m.t_ns)
        if self._keep_tools:
            self._add_tool_call((sid, tcid), tc)
        return tc

    def _tool(
        self, sid: str, kind: str, u: dict[str, Any], m: RpcMessage, turn: Turn | None
    ) -> None:
        tcid = u.get("toolCallId")
        if not isinstance(tcid, str):
            return
        tc = None
        if self._keep_tools:
            tc = self.tool_calls.get((sid, tcid)) or self._find_tool_call((sid, tcid))
        if tc is None:
            tc = self._new_tool_call(sid, tcid, m)
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

    def _content(self, tc: ToolCall, items: list[Any], m: RpcMessage) -> None:
        """Link terminal anchors and record diffs found in tool call content (§6.3): the
        items this update set (what they link does not depend on earlier updates)."""
        for item in items:
            if not isinstance(item, dict):
                continue
            t = item.get("type")
            if t == "terminal":
                tid = item.get("terminalId")
                if not isinstance(tid, str):
                    continue
                if self._keep_terminals:
                    self._anchor(tc, tid, m)
                if tid not in tc.terminal_ids:
                    tc.terminal_ids.append(tid)
            elif t == "diff" and self._keep_files:
                self._diff(tc, item, m)
            elif t == "session" and isinstance(item.get("sessionId"), str):
                linked = item["sessionId"]
                if linked not in tc.session_ids:
                    tc.session_ids.append(linked)
                sub = self.subagents.get(linked)
                if sub is not None and tc.tool_call_id not in sub.tool_call_ids:
                    sub.tool_call_ids.append(tc.tool_call_id)

    def _anchor(self, tc: ToolCall, tid: str, m: RpcMessage) -> None:
        term = self._terminal(tc.session_id, tid, m)
        if term is not None and tc.tool_call_id not in term.tool_call_ids:
            term.tool_call_ids.append(tc.tool_call_id)
            term.events.append(TerminalEvent(m.seq, m.t_ns, "anchor", detail=tc.tool_call_id))

    def _diff(self, tc: ToolCall, item: dict[str, Any], m: RpcMessage) -> None:
        # a digest, not the diff itself: a capture repeats its diffs in every update of the
        # tool call, and keeping each text twice doubles the memory
        dumped = orjson.dumps(item, option=orjson.OPT_SORT_KEYS)
        key = (tc.session_id, tc.tool_call_id, hashlib.blake2b(dumped).digest())
        if key in self._diffs_seen:
            return
        self._diffs_seen.add(key)
        s = self.sessions.get(tc.session_id)
        cwd = s.cwd if s is not None else None
        if "changes" in item:
            self.files.v2_diff(item, tc.session_id, tc.tool_call_id, m.seq, m.t_ns)
        else:
            self.files.v1_diff(item, tc.session_id, tc.tool_call_id, m.seq, m.t_ns, cwd)

    # -- terminals (§6.3) ---------------------------------------------------------------

    def _terminal(
        self, sid: str | None, tid: Any, m: RpcMessage, owner: str | None = None
    ) -> Terminal | None:
        if not isinstance(tid, str):
            return None
        key = (sid or "", tid)
        t = self.terminals.get(key) or self._find_terminal(key)
        if t is None:
            who = owner or ("agent" if self.v2 else "client")
            t = Terminal(sid or "", tid, who, m.seq, m.t_ns)
            t.replayed = key[0] in self._replaying
            self._add_terminal(key, t)
        return t

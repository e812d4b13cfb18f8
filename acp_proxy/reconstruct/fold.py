"""The fold: frames in, reconstructed state out (pure, no I/O).

What belongs here: :class:`Reconstruction`, which takes frames in ``seq`` order and routes
each message to the records of ``tools``, ``terminals``, ``files`` and ``session``; and
:func:`reconstruct`, which folds a whole capture or stops at a given ``seq`` ("the state at
a point in the capture"). The protocol version comes from the capture's ``initialize``, or
the ``proxy/initialize`` a conductor sends a proxy (the agent's answer, else the client's
request; docs/protocol.md §3, §13.4); it selects the v1 or v2
reading where the wire shapes alone do not (``null`` in tool call updates, the end of a
turn, who owns a terminal).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from acp_proxy import collector
from acp_proxy.protocol.envelopes import MCP_METHODS, is_initialize
from acp_proxy.protocol.frames import Direction, Frame
from acp_proxy.protocol.jsonrpc import id_token
from acp_proxy.reconstruct.filestate import FileChange
from acp_proxy.reconstruct.history import Replay
from acp_proxy.reconstruct.session import Permission, Retry, Turn
from acp_proxy.reconstruct.terminals import TerminalEvent
from acp_proxy.reconstruct.tools import StatusChange, apply_v1, apply_v2
from acp_proxy.reconstruct.updates import EVERYTHING, OUTPUT_UPDATES, Fold
from acp_proxy.reconstruct.wire import Pairer, RpcMessage

__all__ = ["OUTPUT_UPDATES", "TERMINAL_ANSWERS", "Reconstruction", "reconstruct"]

_C2A = Direction.CLIENT_TO_AGENT
_TERMINAL_EVENTS = frozenset({"terminal/kill", "terminal/release", "terminal/cancel"})
TERMINAL_ANSWERS = frozenset({"terminal/output", "terminal/wait_for_exit"})
TERMINAL_METHODS = _TERMINAL_EVENTS | TERMINAL_ANSWERS | {"terminal/create"}
"""Every method of the client's terminals: only the ``terminals`` part reads them."""
FILE_METHODS = frozenset({"fs/read_text_file", "fs/write_text_file"})
"""Every method of the client's files: only the ``files`` part reads them."""
"""v1 requests whose answer changes the terminal they name (``params.terminalId``)."""


def reconstruct(frames: Iterable[Frame], *, at: int | None = None) -> Reconstruction:
    """Fold ``frames`` (in ``seq`` order); with ``at``, stop after the frame numbered ``at``.

    The cyclic garbage collector is paused meanwhile (:func:`acp_proxy.collector.paused`:
    the fold makes no cycles).
    """
    r = Reconstruction()
    with collector.paused():
        for frame in frames:
            if at is not None and frame.seq > at:
                break
            r.feed(frame)
    return r


def _key(m: RpcMessage) -> tuple[int, str | None]:
    return (m.seq, m.id)


class Reconstruction(Fold):
    """Everything a client showed, rebuilt from the recorded frames folded so far: frames
    are paired into messages here, requests and responses routed (``session/update`` is
    :class:`~acp_proxy.reconstruct.updates.Fold`'s)."""

    def __init__(self, parts: frozenset[str] = EVERYTHING, *, timelines: bool = True) -> None:
        super().__init__(parts, timelines=timelines)
        self._pairer = Pairer()
        self._keys: dict[tuple[str, str], Turn] = {}  # (session, idempotencyKey) -> its turn

    def only_session(self, sid: str) -> None:
        """Keep what belongs to session ``sid`` alone (a view of one session of several)."""
        self.sessions = {k: v for k, v in self.sessions.items() if k == sid}
        self.tool_calls = {k: v for k, v in self.tool_calls.items() if k[0] == sid}
        self.terminals = {k: v for k, v in self.terminals.items() if k[0] == sid}
        self.permissions = [p for p in self.permissions if p.session_id == sid]
        self.turns = [t for t in self.turns if t.session_id == sid]
        self.files.changes = [c for c in self.files.changes if c.session_id == sid]
        for path in list(self.files.paths):
            h = self.files.paths[path]
            h.versions = [v for v in h.versions if v.session_id == sid]
            if not h.versions:
                del self.files.paths[path]

    # -- driving ------------------------------------------------------------------------

    def feed(self, frame: Frame) -> None:
        self.frames += 1
        self.last_seq = frame.seq
        for m in self._pairer.messages(frame):
            self.take(m)

    def feed_counted(self, seq: int, t_ns: int, sid: str, kind: str) -> None:
        """Fold frame ``seq``, a ``session/update`` notification of one of the
        :attr:`counted` kinds, from what the recorder derived of it alone (its session id,
        ``""`` when not text, and its kind): as :meth:`feed` would fold its bytes."""
        self.frames += 1
        self.last_seq = seq
        self.count_update(sid, kind, seq, t_ns)

    @property
    def unread(self) -> frozenset[str]:
        """The methods whose requests, notifications and answers this fold keeps nothing
        of (the parts it leaves out handle them): a reader may hand such a frame to
        :meth:`feed_unread` unparsed, when it is one the recorder found nothing odd in (the
        recorder pairs an answer with its request as the fold would, so the answer's
        method is its request's). A terminal's polling is much of a large capture."""
        unread: frozenset[str] = frozenset()
        if not self._keep_terminals:
            unread |= TERMINAL_METHODS
        if not self._keep_files:
            unread |= FILE_METHODS
        return unread

    def feed_unread(
        self,
        seq: int,
        t_ns: int,
        direction: Direction,
        kind: str,
        method: str,
        ident: str | None,
    ) -> None:
        """Fold frame ``seq``, one message of one of the :attr:`unread` methods (its
        ``kind``, ``method`` and id token as the recorder derived them), unread: as
        :meth:`feed` would (it keeps nothing of it, but pairs it: an answer in a batch may
        be its request's)."""
        self.frames += 1
        self.last_seq = seq
        self._pairer.unread(seq, t_ns, direction, kind, method, ident)

    def feed_chunk(self, seq: int, t_ns: int, sid: str, kind: str, update: dict[str, Any]) -> None:
        """Fold frame ``seq``, a ``session/update`` notification of one of the
        :data:`~acp_proxy.reconstruct.updates.CHUNKS` kinds, from its ``params.update`` and
        what the recorder derived of it: as :meth:`feed` would fold its bytes."""
        self.frames += 1
        self.last_seq = seq
        self.chunk_update(sid, kind, update, seq, t_ns)

    def feed_chunks(self, first: int, t_ns: int, sid: str, kind: str, n: int) -> None:
        """Fold frames ``first`` to ``first + n - 1``, chunks as :meth:`feed_chunk` takes,
        from what the recorder derived of them alone (``t_ns`` the first's time): their text
        is left in the frames until their turn's is read
        (:meth:`~acp_proxy.reconstruct.session.Turn.read_text`), in one step
        (:meth:`~acp_proxy.reconstruct.counting.Counting.chunk_run`)."""
        self.frames += n
        self.last_seq = first + n - 1
        self.chunk_run(sid, kind, first, t_ns, n)

    def take(self, m: RpcMessage) -> None:
        """Fold one message (its response already paired with its request)."""
        if m.kind in ("request", "notification"):
            self._request(m)
        else:
            self._response(m)

    def _request(self, m: RpcMessage) -> None:
        method = m.method or ""
        p = m.params
        if method == "session/update":
            self._update(m, p)
        elif method in MCP_METHODS:
            self.mcp.request(m)
        elif is_initialize(method):
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
        elif method == "fs/write_text_file" and self._keep_files:
            sid = m.session_id
            cwd = self.sessions[sid].cwd if sid in self.sessions else None
            change = self.files.write(p, sid, m.seq, m.t_ns, cwd)
            if change is not None:
                self._by_request[_key(m)] = change
        elif method in _TERMINAL_EVENTS and self._keep_terminals:
            t = self._terminal(m.session_id, p.get("terminalId"), m)
            if t is not None:
                what = method.split("/")[1]
                t.events.append(TerminalEvent(m.seq, m.t_ns, what))
                t.killed = t.killed or what == "kill"
                t.released = t.released or what == "release"
        elif method == "tool_call/cancel":
            tc = self._find_tool_call((str(m.session_id), str(p.get("toolCallId"))))
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
            # session/update before answering (§4.1, §4.3, §12.3, §13.2)
            if method == "session/load" or p.get("replayFrom") is not None:
                marked = method == "session/resume"
                replay = Replay(p["sessionId"], method, m.seq, m.t_ns, marked)
                self.replays.append(replay)
                self._replaying[p["sessionId"]] = replay

    def _response(self, m: RpcMessage) -> None:
        req = m.request
        if req is None:
            return
        method = req.method or ""
        ok = m.kind == "response"
        result = m.result
        r = result if isinstance(result, dict) else {}
        if method in MCP_METHODS:
            self.mcp.response(m)
        elif is_initialize(method):
            v = r.get("protocolVersion")
            if isinstance(v, int):
                self.protocol_version = v
            self.agent_info = r.get("agentInfo") or r.get("info")
        elif method in ("session/new", "session/fork", "session/load", "session/resume"):
            sid = r.get("sessionId", req.params.get("sessionId"))
            self._replay_answered(req, m)
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
            if isinstance(turn, tuple):  # a retry: the agent answers with the original id
                first, retry = turn
                retry.response_seq, retry.message_id = m.seq, r.get("messageId")
                retry.error = m.body.get("error") if m.kind == "error" else None
                if first.acked_seq is None and first.message_id is None and ok:
                    first.acked_seq, first.message_id = m.seq, r.get("messageId")
            elif isinstance(turn, Turn):
                self._prompt_answered(turn, m, r)
        elif method == "session/request_permission":
            perm = self._by_request.pop(_key(req), None)
            if isinstance(perm, Permission):
                perm.answer(result, m.body.get("error"), m.seq, m.t_ns)
        elif method == "fs/read_text_file" and ok and self._keep_files:
            self.files.read(req.params, result, req.session_id, m.seq, m.t_ns)
        elif method == "fs/write_text_file" and self._keep_files:
            change = self._by_request.pop(_key(req), None)
            if isinstance(change, FileChange):
                if ok:
                    self.files.write_done(change)
                else:
                    self.files.write_failed(change, m.seq)
        elif method == "terminal/create" and ok and self._keep_terminals:
            t = self._terminal(req.session_id, r.get("terminalId"), m, owner="client")
            if t is not None:
                t.apply_create(req.params, m.seq, m.t_ns)
        elif method in TERMINAL_ANSWERS and ok and self._keep_terminals:
            t = self._terminal(req.session_id, req.params.get("terminalId"), m, owner="client")
            if t is not None and method == "terminal/output":
                t.apply_output(r, m.seq, m.t_ns)
            elif t is not None:
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

    def _replay_answered(self, req: RpcMessage, m: RpcMessage) -> None:
        """The answer to a ``session/load`` or ``session/resume``: the end of its replay,
        and of its children's (§13.2)."""
        for replay in reversed(self.replays):
            if replay.request_seq == req.seq:
                replay.response_seq, replay.ok = m.seq, m.kind == "response"
                for sid in (replay.session_id, *replay.children):
                    if self._replaying.get(sid) is replay:
                        del self._replaying[sid]
                return

    # -- turns (§6.2), retried prompts (§13.3) ----------------------------------------

    def _prompt(self, m: RpcMessage, p: dict[str, Any]) -> None:
        sid = p.get("sessionId")
        sid = sid if isinstance(sid, str) else None
        key = p.get("idempotencyKey") if self.v2 else None
        if isinstance(key, str) and sid is not None:
            first = self._keys.get((sid, key))
            if first is not None:  # the same submission again: one turn, one more attempt
                retry = Retry(m.seq, m.t_ns, m.id)
                first.retries.append(retry)
                self._by_request[_key(m)] = (first, retry)
                return
        turn = Turn(sid, len(self.turns) + 1, m.id, m.seq, m.t_ns, p.get("prompt"))
        turn.idempotency_key = key if isinstance(key, str) else None
        if isinstance(key, str) and sid is not None:
            self._keys[(sid, key)] = turn
        self.turns.append(turn)
        self._by_request[_key(m)] = turn
        if sid is not None:
            self._open[sid] = turn

    def _prompt_answered(self, turn: Turn, m: RpcMessage, r: dict[str, Any]) -> None:
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

    # -- permissions (§6.4) -------------------------------------------------------------

    def _permission(self, m: RpcMessage, p: dict[str, Any]) -> None:
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
            if self._keep_tools:
                self._permission_tool_call(sid or "", tcid, inner, m)
        if not self._keep_sessions:
            return
        title = p.get("title")
        if not isinstance(title, str):
            title = inner.get("title") if inner is not None else None
            if not isinstance(title, str) and isinstance(tcid, str):
                known = self._find_tool_call((sid or "", tcid))
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

    def _permission_tool_call(
        self, sid: str, tcid: str, inner: dict[str, Any], m: RpcMessage
    ) -> None:
        """A permission's tool call is applied as an update, as a client shows it."""
        tc = self._find_tool_call((sid, tcid))
        if tc is None:
            tc = self._new_tool_call(sid, tcid, m)
            tc.status_history.append(StatusChange("pending", m.seq, m.t_ns))
            turn = self._open.get(sid)
            if turn is not None:
                turn.tool_call_ids.append(tcid)
        if self.v2:
            apply_v2(tc, inner, m.seq, m.t_ns)
        else:
            apply_v1(tc, inner, m.seq, m.t_ns, create=False)

"""Passive conformance checking of recorded frames: the driver (pure, no I/O).

What belongs here: :class:`Checker`, which takes the frames of one capture in ``seq`` order
(both directions) and hands each to the checks in turn — framing
(:mod:`~acp_proxy.check.core.framing`), JSON-RPC (:mod:`~acp_proxy.check.core.rpc`), the ACP JSON
Schema of the negotiated version (:mod:`~acp_proxy.check.core.validate`), and the behaviour
rules: lifecycle and sessions (:mod:`~acp_proxy.check.core.lifecycle`), capabilities
(:mod:`~acp_proxy.check.core.capabilities`), prompt turns (:mod:`~acp_proxy.check.core.turns`), tool
calls, terminals and permissions (:mod:`~acp_proxy.check.core.tools`) — and collects the
:class:`~acp_proxy.check.core.findings.Finding` values they raise. :meth:`Checker.feed` returns what
a frame broke at once (so a live recorder can print it); :meth:`Checker.finish` what only the
end of the capture shows. The rules themselves are not here.

Everything a frame carries is hostile: any value in any field must produce findings, never
an exception.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from acp_proxy.check.core import lifecycle, sessions, tools, turns
from acp_proxy.check.core.capabilities import check_capabilities
from acp_proxy.check.core.context import Context, Request, Session, Thresholds, as_dict, sender
from acp_proxy.check.core.findings import Finding
from acp_proxy.check.core.framing import Framing
from acp_proxy.check.core.rpc import Rpc
from acp_proxy.check.core.rules import RULES
from acp_proxy.check.core.validate import SchemaCheck
from acp_proxy.events.ending import CaptureEnd
from acp_proxy.protocol.envelopes import is_initialize, unwrap
from acp_proxy.protocol.frames import Direction, Frame
from acp_proxy.protocol.jsonrpc import Info, Kind

__all__ = ["Checker", "Thresholds", "check_frames"]


class Checker:
    """Check one capture, frame by frame. ``version`` forces the protocol version (else
    ``initialize`` decides, v1 when there is none); ``unstable`` validates against the
    unstable schemas; ``ignore`` drops rule ids; ``side`` keeps and counts only the findings
    of one side (``client`` or ``agent``); with ``keep_per_rule``, only the first findings
    of each rule are kept in :attr:`findings` (every one is counted in :attr:`counts`)."""

    def __init__(
        self,
        *,
        version: int | None = None,
        unstable: bool = False,
        ignore: Iterable[str] = (),
        thresholds: Thresholds | None = None,
        keep_per_rule: int | None = None,
        side: str | None = None,
    ) -> None:
        self.ctx = Context(version=version, unstable=unstable, ignore=ignore, thresholds=thresholds)
        self.keep_per_rule = keep_per_rule
        self.side = side
        self.counts: dict[str, int] = {}
        self.findings: list[Finding] = []
        self.frames = 0
        self.framing = Framing(self.ctx)
        self.schema = SchemaCheck(self.ctx)
        self.rpc = Rpc(self.ctx, self.schema)

    @property
    def version(self) -> int:
        """The protocol version the capture is checked as."""
        return self.ctx.version

    # -- entry points ----------------------------------------------------------------------

    def run(
        self,
        frames: Iterable[tuple[Frame, Sequence[str]]],
        ending: Callable[[], CaptureEnd | None] | None = None,
    ) -> Checker:
        """Check a whole capture (its frames with their flags, in order); the checker, with
        every finding in :attr:`findings`. ``ending``, asked once the frames are read: who
        ended the capture (a request it cut short is no peer's fault)."""
        for frame, flags in frames:
            self.feed(frame, flags)
        self.finish(ending() if ending is not None else None)
        return self

    def feed(self, frame: Frame, flags: Sequence[str] = ()) -> list[Finding]:
        """Check one frame (``flags``: what the recorder noted about it); the findings it
        raised."""
        self.ctx.out = []
        self.ctx.at(frame.seq, frame.raw)
        self.frames += 1
        try:
            info = self.framing.read(frame, flags)
            if info is not None and info.kind == Kind.BATCH:
                self._batch(frame, info)
            elif info is not None:
                self._message(frame, info, info.value)
        except Exception as e:  # a hostile value we did not foresee: say so, never crash
            self.ctx.add("capture.incomplete", "-", f"not checked: {type(e).__name__}")
        return self._emit()

    def finish(self, ending: CaptureEnd | None = None) -> list[Finding]:
        """What the end of the capture shows: unanswered requests (``ending``: who ended
        the capture), unfinished turns."""
        ctx = self.ctx
        ctx.out = []
        ctx.at(-1)
        self.framing.finish()
        self.rpc.finish(ending)
        turns.finish(ctx)
        sessions.finish(ctx)
        self.framing.finish_incomplete()
        lifecycle.finish(ctx, self.frames)
        return self._emit()

    def _emit(self) -> list[Finding]:
        out = self.ctx.out
        covered = {f.seq for f in out if RULES[f.rule].covers_schema}
        if covered:
            out = [f for f in out if not (f.rule == "schema.invalid" and f.seq in covered)]
        for f in out:
            if self.side is not None and f.side != self.side:
                continue
            n = self.counts.get(f.rule, 0)
            self.counts[f.rule] = n + 1
            if self.keep_per_rule is None or n < self.keep_per_rule:
                self.findings.append(f)
        self.ctx.out = []
        return out

    # -- messages --------------------------------------------------------------------------

    def _batch(self, frame: Frame, info: Info) -> None:
        side = sender(frame.direction)
        items = info.items or []
        self.rpc.batch(side, items)
        values = info.value if isinstance(info.value, list) else []
        for item, value in zip(items, values, strict=False):
            if item.kind == Kind.INVALID:
                self.rpc.not_jsonrpc(side, in_batch=True)
            else:
                self._message(frame, item, value)
        tools.batch(self.ctx, side, items[: len(values)])

    def _message(self, frame: Frame, info: Info, value: Any) -> None:
        if info.kind == Kind.INVALID:
            self.rpc.not_jsonrpc(sender(frame.direction))
        elif info.kind in (Kind.REQUEST, Kind.NOTIFICATION):
            self._call(frame, info, as_dict(value))
        else:
            self._answer(frame, info, as_dict(value))

    def _call(self, frame: Frame, info: Info, body: dict[str, Any]) -> None:
        d = frame.direction
        side = sender(d)
        method = info.method or ""
        params = as_dict(body.get("params"))
        self.rpc.request(info, Request(frame.seq, frame.t_ns, method, params, d))
        lifecycle.call(self.ctx, method, params, d, side)
        self.schema.call(info, body, method, side)
        wrapped = unwrap(method, params, d)
        if wrapped is not None:  # a proxy-chain envelope: the message it carries is ACP
            inner = {"params": wrapped.params} if wrapped.params is not None else {}
            self.schema.call(info, inner, wrapped.method, sender(wrapped.direction))
        if method.startswith("_"):
            return  # an extension: its meaning is its own
        s = lifecycle.session_of_call(self.ctx, method, params, d, side)
        if self.ctx.init_done:
            check_capabilities(self.ctx, method, params, d)
        if s is None:
            if d is Direction.AGENT_TO_CLIENT:
                sessions.announce_check(self.ctx, params.get("sessionId"))
            return
        sessions.call(self.ctx, frame, s, method, params)
        if method == "session/update":
            self._update(frame, s, str(params.get("sessionId")), params.get("update"), side)
        elif not turns.call(self.ctx, frame, info, s, method, params):
            tools.call(self.ctx, frame, s, method, params, side)

    def _update(self, frame: Frame, s: Session, sid: str, update: Any, side: str) -> None:
        u = as_dict(update)
        kind = u.get("sessionUpdate")
        if not isinstance(kind, str):
            return  # the schema says what is wrong with it
        sessions.update(self.ctx, sid, s, kind, u, side)
        tools.update(self.ctx, s, kind, u, side)
        turns.update(self.ctx, frame, s, sid, kind, u, side)

    def _answer(self, frame: Frame, info: Info, body: dict[str, Any]) -> None:
        req = self.rpc.response(frame, info, body)
        if req is None:
            return
        side = sender(frame.direction)
        is_error = info.kind == Kind.ERROR
        result = body.get("result")
        if not is_error and req.method and not req.method.startswith("_"):
            self.schema.result(req, result, side)
        wrapped = unwrap(req.method, req.params, req.direction)
        if wrapped is not None and not is_error:  # the wrapped request's own result
            inner = Request(req.seq, req.t_ns, wrapped.method, {}, wrapped.direction)
            self.schema.result(inner, result, sender(frame.direction))
        r = as_dict(result)
        if is_initialize(req.method) and req.direction is Direction.CLIENT_TO_AGENT:
            if not is_error:
                lifecycle.initialize_result(self.ctx, r)
            return
        turns.answer(self.ctx, frame, req, r, is_error, side)
        sessions.answer(self.ctx, req, r, is_error)
        if not is_error:
            lifecycle.answered(self.ctx, req.method, r)
            tools.answer(self.ctx, req, r, side)


def check_frames(
    frames: Iterable[tuple[Frame, Sequence[str]]], ending: CaptureEnd | None = None, **options: Any
) -> list[Finding]:
    """Every finding of one capture, in order (``ending``: who ended it)."""
    return Checker(**options).run(frames, lambda: ending).findings

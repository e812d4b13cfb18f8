"""The JSON-RPC checks: envelopes, batches, and every request paired with its response (pure).

What belongs here: :class:`Rpc` — requests remembered and responses paired through the one
pairing rule (:mod:`acp_proxy.protocol.pairing`: per direction, ids as their exact JSON
text), with what breaks it (a request id reused while pending, a response to nothing, a
second response), the error object of an error response, how long a request took to be
answered (``timing.slow-response``), and the requests never answered by the end. Also what
is JSON but no JSON-RPC message, and batches (none in v1, never empty in v2).
"""

from __future__ import annotations

from typing import Any

from acp_proxy.check.core.context import SEC, Context, Request, receiver, sender
from acp_proxy.check.core.validate import SchemaCheck
from acp_proxy.events.ending import CaptureEnd
from acp_proxy.protocol.frames import Direction, Frame
from acp_proxy.protocol.jsonrpc import Info, Kind
from acp_proxy.protocol.pairing import Pairing

__all__ = ["Rpc"]

_ANSWERED_LIMIT = 100_000
# Requests that wait for a person: no answer time is too slow for them.
_HUMAN_METHODS = frozenset({"session/request_permission", "elicitation/create"})


class Rpc:
    """The JSON-RPC findings of one capture."""

    def __init__(self, ctx: Context, schema: SchemaCheck) -> None:
        self.ctx = ctx
        self.schema = schema
        self._pairing: Pairing[Request] = Pairing()
        self._answered: dict[tuple[Direction, str], int] = {}

    def not_jsonrpc(self, side: str, *, in_batch: bool = False) -> None:
        """JSON that is no request, notification or response."""
        if in_batch:
            self.ctx.add("rpc.not-jsonrpc", side, "a batch entry that is not a JSON-RPC message")
        else:
            message = "JSON, but not a request, notification or response"
            self.ctx.add("rpc.not-jsonrpc", side, message)

    def batch(self, side: str, items: list[Info]) -> None:
        """A batch as such: v1 has none, and one must not be empty."""
        if self.ctx.version == 1:
            self.ctx.add("rpc.batch", side, "ACP v1 has no JSON-RPC batches")
        elif not items:
            self.ctx.add("rpc.batch", side, "an empty batch")

    def request(self, info: Info, req: Request) -> None:
        """Remember a request (a notification is not remembered)."""
        if info.kind != Kind.REQUEST or info.id is None:
            return
        d = req.direction
        if self._pairing.request(d, info.id, req):
            self.ctx.add(
                "rpc.duplicate-request-id",
                sender(d),
                f"request id {info.id} is reused while still pending",
            )
        self._answered.pop((d, info.id), None)

    def response(self, frame: Frame, info: Info, body: dict[str, Any]) -> Request | None:
        """The request a response answers, if any; what is wrong with the pairing, the error
        object, or the time the answer took."""
        ctx = self.ctx
        d = frame.direction
        side = sender(d)
        token = info.id or "null"
        is_error = info.kind == Kind.ERROR
        req, how = self._pairing.response(d, token, error=is_error)
        if is_error:
            self._error_object(body, side)
        if req is None:
            if how != "null_id":  # a null id answers a frame that could not be read
                self._stray(d, token, side)
            return None
        self._answered[(d.opposite, token)] = req.seq
        if len(self._answered) > _ANSWERED_LIMIT:
            del self._answered[next(iter(self._answered))]
        latency = (frame.t_ns - req.t_ns) / SEC
        if (
            latency > ctx.thresholds.slow_response
            and req.method not in _HUMAN_METHODS
            and not (req.method == "session/prompt" and ctx.version == 1)
        ):
            ctx.add(
                "timing.slow-response",
                side,
                f"{req.method} answered after {latency:.1f} s",
                [req.seq],
            )
        return req

    def _stray(self, d: Direction, token: str, side: str) -> None:
        key = (d.opposite, token)
        if key in self._answered:
            self.ctx.add(
                "rpc.duplicate-response",
                side,
                f"a second response to request {token}",
                [self._answered[key]],
            )
        else:
            self.ctx.add(
                "rpc.unpaired-response",
                side,
                f"a response to request {token}, which was never sent",
            )

    def _error_object(self, body: dict[str, Any], side: str) -> None:
        err = body.get("error")
        if not isinstance(err, dict):
            self.ctx.add("rpc.invalid-error", side, "error is not an object")
            return
        code, message = err.get("code"), err.get("message")
        if code.__class__ is not int:
            self.ctx.add("rpc.invalid-error", side, "error.code is not an integer")
        elif not isinstance(message, str):
            self.ctx.add("rpc.invalid-error", side, "error.message is not a string")
        else:
            self.schema.error(err, side)

    def finish(self, ending: CaptureEnd | None = None) -> None:
        """The requests never answered: the receiver's fault, unless the capture was ended
        by the client or the proxy first (``ending``), which cut them short."""
        cut = ending is not None and not ending.blames_agent
        for direction, _token, req in self._pairing.outstanding():
            self.ctx.at(req.seq)
            if cut:
                assert ending is not None
                self.ctx.add("rpc.cut-short", "capture",
                             f"{req.method} not answered before {ending.why}")  # fmt: skip
            else:
                self.ctx.add("rpc.unanswered", receiver(direction),
                             f"{req.method} was never answered")  # fmt: skip

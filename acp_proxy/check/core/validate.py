"""Validation against the bundled ACP JSON Schemas (pure, no I/O).

What belongs here: :class:`SchemaCheck` — which definition a message is validated against
(a call's params by its method *as sent by its sender*, a result by the method of the
request it answers, an error by the JSON-RPC error object, an id by ``RequestId``), methods
the schema does not define for that direction and kind (``schema.method``), and what only
the unstable schema accepts (``schema.unstable``, unless ``--unstable``), and what only
newer spec pages define (``schema.newer``, a note: valid ACP as the newest spec has it,
:mod:`acp_proxy.check.core.schemas.overlay`). ``_`` extensions
and ``$/`` methods the schema does not define are not validated. The schemas themselves are
loaded by :mod:`acp_proxy.check.core.schemas`.
"""

from __future__ import annotations

from typing import Any

from acp_proxy.check.core.context import Context, Request, sender
from acp_proxy.check.core.schemas import Schemas, load_schemas
from acp_proxy.protocol.jsonrpc import Info, Kind

__all__ = ["SchemaCheck"]

_INT64 = range(-(2**63), 2**63)


class SchemaCheck:
    """The schema findings, for the version the context has settled on."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def _schemas(self, unstable: bool, newer: bool = False) -> Schemas | None:
        if self.ctx.no_schema:
            return None
        return load_schemas(self.ctx.version, unstable, newer=newer)

    def call(self, info: Info, body: dict[str, Any], method: str, side: str) -> None:
        """A request's or notification's id, method and params."""
        ctx = self.ctx
        s = self._schemas(ctx.unstable)
        if s is None:
            return
        if "id" in body:
            ident = body["id"]
            plain = ident.__class__ is str or (ident.__class__ is int and ident in _INT64)
            if not plain and not s.is_valid("RequestId", ident):
                ctx.add("schema.invalid", side, f"id {info.id} is not a valid request id")
        if method.startswith("_") or (method.startswith("$/") and s.lookup(method, side) is None):
            return  # extensions, and protocol messages receivers may ignore
        mt = s.lookup(method, side)
        if mt is None:
            self._unknown_method(s, method, side)
            return
        want = mt.request if info.kind == Kind.REQUEST else mt.notification
        if want is None:
            kind = "notification" if info.kind == Kind.REQUEST else "request"
            ctx.add("schema.method", side, f"{method} is a {kind}, sent as a {info.kind}")
            return
        self._validate(s, want, body.get("params"), side, method)

    def _unknown_method(self, s: Schemas, method: str, side: str) -> None:
        ctx = self.ctx
        if not ctx.unstable:
            u = self._schemas(True)
            if u is not None and u.lookup(method, side) is not None:
                ctx.add("schema.unstable", side, f"{method} is in the unstable schema only")
                return
        if s.handled_by(method):
            ctx.add(
                "schema.method",
                side,
                f"{method} is handled by the {side}: only the other side sends it",
            )
        else:
            ctx.add(
                "schema.method",
                side,
                f"{method} is not an ACP v{ctx.version} method (custom methods start with _)",
            )

    def result(self, req: Request, result: Any, side: str) -> None:
        """The result of ``req``, against the response definition of its method."""
        s = self._schemas(self.ctx.unstable)
        if s is None or req.method is None:
            return
        mt = s.lookup(req.method, sender(req.direction))
        if mt is None or mt.response is None:
            return
        self._validate(s, mt.response, result, side, f"the result of {req.method}")

    def error(self, err: dict[str, Any], side: str) -> None:
        """A JSON-RPC error object (its code and message already checked)."""
        s = self._schemas(self.ctx.unstable)
        if s is not None:
            self._validate(s, "Error", err, side, "the error object")

    def _validate(self, s: Schemas, definition: str, value: Any, side: str, what: str) -> None:
        if s.is_valid(definition, value):
            return
        ctx = self.ctx
        n = self._schemas(False, newer=True)
        if n is not None and n.is_valid(definition, value):
            ctx.add(
                "schema.newer", side, f"{what} is valid as newer spec pages define {definition}"
            )
            return
        if not ctx.unstable:
            u = self._schemas(True)
            if u is not None and u.is_valid(definition, value):
                ctx.add(
                    "schema.unstable", side, f"{what} is valid only under the unstable {definition}"
                )
                return
        reasons = s.explain(definition, value) or ["does not match"]
        ctx.add("schema.invalid", side, f"{what} ({definition}): " + "; ".join(reasons))

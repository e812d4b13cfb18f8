"""Frames to JSON-RPC messages with their partners (pure, no I/O).

What belongs here: decoding a frame's bytes (each entry of a batch on its own,
docs/protocol.md §2.2), telling requests, notifications, responses and errors apart, and pairing
each response with the request that travelled the *other* way under the same id token, by
the one rule of :mod:`acp_proxy.protocol.pairing` (docs/protocol.md §1 and §12.2). Nothing here
knows what a tool call or a terminal is; the folds in this package do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from acp_proxy.protocol.frames import Direction, Frame
from acp_proxy.protocol.jsonrpc import decode, id_token
from acp_proxy.protocol.pairing import Pairing

__all__ = ["Message", "Pairer"]

_EMPTY: dict[str, Any] = {}


@dataclass(slots=True)
class Message:
    """One JSON-RPC message of a frame.

    ``kind`` is ``request``, ``notification``, ``response`` or ``error``. For a response,
    ``request`` is the paired request (or ``None`` when none was seen).
    """

    seq: int
    t_ns: int
    direction: Direction
    kind: str
    method: str | None
    id: str | None
    body: dict[str, Any]
    request: Message | None = None

    @property
    def params(self) -> dict[str, Any]:
        p = self.body.get("params")
        return p if isinstance(p, dict) else _EMPTY

    @property
    def result(self) -> Any:
        return self.body.get("result")

    @property
    def session_id(self) -> str | None:
        """The ACP session: from params, else from the paired request (docs/protocol.md §12.6)."""
        sid = self.params.get("sessionId")
        if isinstance(sid, str):
            return sid
        if self.request is not None:
            return self.request.session_id
        r = self.body.get("result")
        if isinstance(r, dict) and isinstance(r.get("sessionId"), str):
            return str(r["sessionId"])
        return None


class Pairer:
    """Decodes frames into :class:`Message` values and pairs responses with requests."""

    __slots__ = ("_pairing",)

    def __init__(self) -> None:
        self._pairing: Pairing[Message | None] = Pairing()

    def pending(self, direction: Direction, ident: str) -> Message | None:
        """The request ``direction`` sent under ``ident`` that is still unanswered."""
        return self._pairing.pending(direction, ident)

    def messages(self, frame: Frame) -> list[Message]:
        try:  # the common case: one well-formed JSON value
            value = orjson.loads(frame.raw)
        except orjson.JSONDecodeError:  # BOM, noise, odd numbers...: the tolerant reader
            value = decode(frame.raw)
        if isinstance(value, dict):
            m = self._one(frame, value)
            return [m] if m is not None else []
        if isinstance(value, list):
            self._pairing.unreadable(frame.direction, None)  # as the recorder counts a batch
            out = []
            for entry in value:
                if isinstance(entry, dict):
                    m = self._one(frame, entry)
                    if m is not None:
                        out.append(m)
            return out
        self._pairing.unreadable(frame.direction, None)
        return []

    def _one(self, frame: Frame, body: dict[str, Any]) -> Message | None:
        method = body.get("method")
        has_id = "id" in body
        ident = id_token(body["id"]) if has_id else None
        if isinstance(method, str):
            kind = "request" if has_id else "notification"
            m = Message(frame.seq, frame.t_ns, frame.direction, kind, method, ident, body)
            if ident is not None:
                self._pairing.request(frame.direction, ident, m)
            return m
        if ident is None:
            return None
        if "error" in body:
            kind = "error"
        elif "result" in body:
            kind = "response"
        else:
            return None
        request, _ = self._pairing.response(frame.direction, ident, error=kind == "error")
        method = request.method if request is not None else None
        return Message(frame.seq, frame.t_ns, frame.direction, kind, method, ident, body, request)

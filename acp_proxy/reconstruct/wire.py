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

__all__ = ["Pairer", "RpcMessage", "StoredPairs", "parse", "read_message"]

_EMPTY: dict[str, Any] = {}


@dataclass(slots=True)
class RpcMessage:
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
    request: RpcMessage | None = None

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


def parse(raw: bytes) -> Any:
    """The JSON value of a frame, as the fold reads it (``None`` when it holds none)."""
    try:  # the common case: one well-formed JSON value
        return orjson.loads(raw)
    except orjson.JSONDecodeError:  # BOM, noise, odd numbers...: the tolerant reader
        return decode(raw)


def read_message(
    seq: int, t_ns: int, direction: Direction, body: dict[str, Any]
) -> RpcMessage | None:
    """What one JSON object is: a request or notification (a string ``method``), else a
    response or an error (an ``id`` and ``result`` or ``error``), else nothing; unpaired."""
    method = body.get("method")
    has_id = "id" in body
    ident = id_token(body["id"]) if has_id else None
    if isinstance(method, str):
        kind = "request" if has_id else "notification"
        return RpcMessage(seq, t_ns, direction, kind, method, ident, body)
    if ident is None:
        return None
    if "error" in body:
        kind = "error"
    elif "result" in body:
        kind = "response"
    else:
        return None
    return RpcMessage(seq, t_ns, direction, kind, None, ident, body)


class Pairer:
    """Decodes frames into :class:`RpcMessage` values and pairs responses with requests."""

    __slots__ = ("_pairing",)

    def __init__(self) -> None:
        self._pairing: Pairing[RpcMessage | None] = Pairing()

    def pending(self, direction: Direction, ident: str) -> RpcMessage | None:
        """The request ``direction`` sent under ``ident`` that is still unanswered."""
        return self._pairing.pending(direction, ident)

    def messages(self, frame: Frame) -> list[RpcMessage]:
        value = parse(frame.raw)
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

    def unread(
        self,
        seq: int,
        t_ns: int,
        direction: Direction,
        kind: str,
        method: str,
        ident: str | None,
    ) -> None:
        """Pair a message of frame ``seq`` left unread (its ``kind``, ``method`` and id
        token as the recorder derived them) as :meth:`messages` would: a request is kept
        for its answer (without its body), an answer takes its request."""
        if ident is None:
            return
        if kind == "request":
            stub = RpcMessage(seq, t_ns, direction, kind, method, ident, {})
            self._pairing.request(direction, ident, stub)
        elif kind != "notification":
            self._pairing.response(direction, ident, error=kind == "error")

    def _one(self, frame: Frame, body: dict[str, Any]) -> RpcMessage | None:
        m = read_message(frame.seq, frame.t_ns, frame.direction, body)
        if m is None or m.id is None:
            return m
        if m.kind == "request":
            self._pairing.request(frame.direction, m.id, m)
        elif m.kind != "notification":
            m.request, _ = self._pairing.response(frame.direction, m.id, error=m.kind == "error")
            m.method = m.request.method if m.request is not None else None
        return m


class StoredPairs:
    """Decodes frames into :class:`RpcMessage` values paired as the recorder stored them: a
    response names its request's ``seq`` (``messages.request_seq``, found by the same rule,
    :mod:`acp_proxy.protocol.pairing`, when it was recorded). For reading a selection of a
    capture's frames: only requests whose ``method`` is in ``remember`` are kept for their
    answers, and a frame that is not one JSON object (a batch) is refused (``ValueError``):
    the request of an entry of a batch is not named by a seq alone."""

    __slots__ = ("_remember", "_requests")

    def __init__(self, remember: frozenset[str]) -> None:
        self._remember = remember
        self._requests: dict[int, RpcMessage] = {}

    def message(
        self, seq: int, direction: Direction, t_ns: int, raw: bytes, request_seq: int | None
    ) -> RpcMessage | None:
        try:  # parse(), without a call: once per frame of a large capture
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            value = decode(raw)
        if not isinstance(value, dict):
            if isinstance(value, list):
                raise ValueError(f"frame {seq} is a batch")
            return None
        m = read_message(seq, t_ns, direction, value)
        if m is None or m.id is None:
            return m
        if m.kind == "request":
            if m.method in self._remember:
                self._requests[seq] = m
        elif m.kind != "notification" and request_seq is not None:
            m.request = self._requests.pop(request_seq, None)
            m.method = m.request.method if m.request is not None else None
        return m

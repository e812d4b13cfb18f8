"""A capture as an HTTP Archive (HAR 1.2) for browsers' developer tools.

What belongs here: laying a capture out the way Chromium's developer tools export a
WebSocket: one entry per connection whose ``request``/``response`` are the handshake
(as stored: header values kept by allow-list, docs/websocket.md) and whose
``_webSocketMessages`` lists every message (``type`` ``send`` for client → agent,
``receive`` for agent → client; ``time`` in seconds since the epoch; ``opcode`` 1 for
text, 2 for binary with base64 ``data``). A stdio capture is one pseudo-entry
(``stdio:`` URL, no headers) with the same message list, lines as messages.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import IO, Any
from urllib.parse import quote, urlsplit

import orjson

from acp_proxy import __version__
from acp_proxy.export.core.redact import Redactor
from acp_proxy.protocol.frames import Direction, Opcode
from acp_proxy.store.reader import StoredFrame
from acp_proxy.store.refs import Source

__all__ = ["render_har", "write_har", "write_har_export"]


def _epoch(started_at: Any) -> float:
    if isinstance(started_at, str):
        try:
            return datetime.fromisoformat(started_at.replace("Z", "+00:00")).timestamp()
        except ValueError:
            pass
    return 0.0


def _headers(items: Any) -> list[dict[str, str]]:
    out = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, list | tuple) and len(item) == 2:
            out.append({"name": str(item[0]), "value": str(item[1])})
    return out


def _argv(command: Any) -> str:
    try:
        argv = orjson.loads(command) if isinstance(command, str) else []
    except orjson.JSONDecodeError:
        return str(command)
    return " ".join(map(str, argv)) if isinstance(argv, list) else str(argv)


def _query(url: str) -> list[dict[str, str]]:
    query = urlsplit(url).query
    out = []
    for part in query.split("&") if query else []:
        name, _, value = part.partition("=")
        out.append({"name": name, "value": value})
    return out


def _message(f: StoredFrame, epoch: float) -> dict[str, Any]:
    binary = f.frame.opcode is Opcode.BINARY
    data: str | None = None
    if not binary:
        try:
            data = f.raw.decode("utf-8")
        except UnicodeDecodeError:
            binary = True
    if data is None:
        data = base64.b64encode(f.raw).decode("ascii")
    return {
        "type": "send" if f.direction is Direction.CLIENT_TO_AGENT else "receive",
        "time": round(epoch + f.frame.t_ns / 1e9, 6),
        "opcode": 2 if binary else 1,
        "data": data,
    }


def _walk(value: Any, redactor: Redactor | None) -> Any:
    if redactor is None:
        return value
    if isinstance(value, str):
        return redactor.text(value)
    if isinstance(value, list):
        return [_walk(v, redactor) for v in value]
    if isinstance(value, dict):
        return {k: _walk(v, redactor) for k, v in value.items()}
    return value


def _handshake(events: Iterable[dict[str, Any]], redactor: Redactor | None) -> dict[str, Any]:
    """The capture's ``handshake`` event, redacted ({} when there is none)."""
    for e in events:
        if e.get("kind") == "handshake" and e.get("detail"):
            try:
                found = orjson.loads(e["detail"])
            except orjson.JSONDecodeError:
                continue
            if isinstance(found, dict):
                return dict(_walk(found, redactor))
    return {}


Headers = list[dict[str, str]]


def _exchange(
    capture: dict[str, Any], handshake: dict[str, Any], transport: str
) -> tuple[str, Headers, int, Headers]:
    """The URL, request headers, status and response headers of the entry."""
    request = handshake.get("request") if isinstance(handshake.get("request"), dict) else None
    upstream = handshake.get("upstream") if isinstance(handshake.get("upstream"), dict) else None
    response = handshake.get("response") if isinstance(handshake.get("response"), dict) else None
    if request is not None:  # we listened: the client's request and our 101
        base = str(capture.get("listen_url") or "")
        url = base or f"ws://localhost{request.get('path') or '/'}"
        status = int((response or {}).get("status") or 101)
        return (
            url,
            _headers(request.get("headers")),
            status,
            _headers((response or {}).get("headers")),
        )
    if upstream is not None:  # we dialled: our request and the upstream's 101
        url = str(upstream.get("url") or capture.get("upstream_url") or "")
        status = int(upstream.get("status") or 101)
        return (
            url,
            _headers(upstream.get("headers")),
            status,
            _headers(upstream.get("response_headers")),
        )
    if transport == "stdio":
        return f"stdio:///{quote(_argv(capture.get('agent_command')))}", [], 101, []
    return "ws://", [], 101, []


def render_har(
    capture: dict[str, Any],
    frames: Iterable[StoredFrame],
    events: Iterable[dict[str, Any]],
    redactor: Redactor | None = None,
) -> bytes:
    """The HAR text of one capture (``frames`` and ``capture`` already redacted when
    sharing; the handshake event is redacted here with the same ``redactor``)."""
    out = io.BytesIO()
    write_har(capture, frames, events, out, redactor)
    return out.getvalue()


def write_har(
    capture: dict[str, Any],
    frames: Iterable[StoredFrame],
    events: Iterable[dict[str, Any]],
    out: IO[bytes],
    redactor: Redactor | None = None,
) -> int:
    """:func:`render_har`'s text written to ``out`` as the frames come (a million frames
    are never held at once); the number of messages. The bytes are those of the whole
    archive indented by ``orjson`` (a test holds them to it): the archive is laid out with
    no message, and the messages, each laid out alike, go where its empty list is."""
    epoch = _epoch(capture.get("started_at"))
    text = orjson.dumps(_archive(capture, events, redactor), option=orjson.OPT_INDENT_2)
    at = text.rindex(_EMPTY_MESSAGES)  # the last key of the entry: ours, never a value
    indent = at - text.rindex(b"\n", 0, at) - 1
    cut = at + len(_EMPTY_MESSAGES) - 1  # just after its "["
    item = b"\n" + b" " * (indent + 2)
    out.write(text[:cut])
    n = 0
    batch: list[bytes] = []
    dumps, pretty = orjson.dumps, orjson.OPT_INDENT_2
    for f in frames:
        batch.append(item + dumps(_message(f, epoch), option=pretty).replace(b"\n", item))
        n += 1
        if len(batch) == _BATCH:
            out.write((b"," if n > _BATCH else b"") + b",".join(batch))
            batch = []
    if batch:
        out.write((b"," if n > len(batch) else b"") + b",".join(batch))
    out.write((b"\n" + b" " * indent if n else b"") + text[cut:] + b"\n")
    return n


def write_har_export(
    source: Source,
    out: IO[bytes],
    *,
    frames_only: bool = False,
    progress: Callable[[Iterator[StoredFrame]], Iterator[StoredFrame]] | None = None,
) -> int:
    """A whole capture as an unredacted HAR written to ``out`` (:func:`write_har`; the
    events give the handshake, none with ``frames_only``); ``progress`` wraps the frames
    as they are read. Returns the number of messages."""
    frames = source.frames()
    events = [] if frames_only else list(source.events())
    return write_har(source.capture, frames if progress is None else progress(frames), events, out)


_EMPTY_MESSAGES = b'"_webSocketMessages": []'
_BATCH = 4096
"""Messages laid out before they are written at once."""


def _archive(
    capture: dict[str, Any], events: Iterable[dict[str, Any]], redactor: Redactor | None
) -> dict[str, Any]:
    """The archive of one capture with no message yet: one entry, its handshake."""
    handshake = _handshake(events, redactor)
    transport = str(capture.get("transport") or "stdio")
    url, req_headers, status, resp_headers = _exchange(capture, handshake, transport)
    wait = handshake.get("handshake_ms")
    ended = capture.get("ended_ns")
    entry: dict[str, Any] = {
        "startedDateTime": str(capture.get("started_at") or "1970-01-01T00:00:00Z"),
        "time": round(ended / 1e6, 3) if isinstance(ended, int) else 0,
        "request": {
            "method": "GET",
            "url": url,
            "httpVersion": "HTTP/1.1",
            "cookies": [],
            "headers": req_headers,
            "queryString": _query(url),
            "headersSize": -1,
            "bodySize": 0,
        },
        "response": {
            "status": status,
            "statusText": "Switching Protocols" if status == 101 else "",
            "httpVersion": "HTTP/1.1",
            "cookies": [],
            "headers": resp_headers,
            "content": {"size": 0, "mimeType": "x-unknown"},
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": 0,
        },
        "cache": {},
        "timings": {
            "blocked": -1,
            "dns": -1,
            "connect": -1,
            "ssl": -1,
            "send": 0,
            "wait": float(wait) if isinstance(wait, int | float) else 0,
            "receive": 0,
        },
        "comment": f"acp-proxy capture {capture.get('uid')} ({transport})",
        "_resourceType": "websocket",
        "_webSocketMessages": [],
    }
    har = {
        "log": {
            "version": "1.2",
            "creator": {"name": "acp-proxy", "version": __version__},
            "pages": [],
            "entries": [entry],
        }
    }
    return har

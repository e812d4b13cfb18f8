"""Classify a frame without altering it (pure, no I/O).

What belongs here: reading a frame's bytes to derive the queryable fields stored beside
them — kind, method, id as JSON text, ACP session, update kind, tool call and terminal ids,
error code — and the anomalies a recorder should flag. The bytes are never changed; every
function takes ``bytes`` and returns new values.

Parsing is tolerant in the way the SDKs are (docs/protocol.md §2.1): a UTF-8 BOM, surrounding
whitespace and a trailing ``\\r`` are skipped for parsing only. Anything else odd is parsed
as far as it can be and named in ``anomalies``:

``empty`` (no bytes, or only whitespace), ``whitespace`` (spaces or tabs around the JSON),
``crlf``, ``bom``, ``invalid_utf8``,
``leading_noise`` (bytes before the JSON, e.g. ANSI escapes from a chatty agent),
``not_json``, ``batch``, ``empty_batch``, ``big_int`` (an integer outside 64 bits),
``duplicate_keys``, ``nan`` (NaN/Infinity literals), ``lone_surrogate``, ``too_deep``
(nesting beyond what a parser can follow), ``not_jsonrpc`` (JSON, but not a JSON-RPC
message), ``no_version`` (``"jsonrpc":"2.0"`` missing).

The fast path is one ``orjson.loads``. When re-serialising the parsed value does not
reproduce the input exactly (whitespace, escapes, duplicate keys...), a slower standard
library parse checks for duplicate keys, exact integers and non-standard constants.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

__all__ = [
    "Info",
    "Kind",
    "classify",
    "decode",
    "id_token",
    "safe_text",
]

BOM = b"\xef\xbb\xbf"
_WS = b" \t\r\n"
_SLOW_DUPLICATE_CHECK_LIMIT = 8 * 1024 * 1024
_MAX_DEPTH = 4000
_LONE_SURROGATE = re.compile(
    rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    rb"|(?<![0-9a-fA-F]{2})(?<!\\u[dD][89abAB])\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


class Kind:
    """Frame kinds as stored (plain strings, so SQL users see words)."""

    REQUEST = "request"
    NOTIFICATION = "notification"
    RESPONSE = "response"
    ERROR = "error"
    BATCH = "batch"
    INVALID = "invalid"


@dataclass(slots=True)
class Info:
    """What a frame is. ``value`` is the parsed JSON (or ``None`` when it is not JSON)."""

    kind: str
    method: str | None = None
    id: str | None = None
    session_id: str | None = None
    update_kind: str | None = None
    tool_call_id: str | None = None
    terminal_id: str | None = None
    error_code: int | None = None
    anomalies: list[str] = field(default_factory=list)
    items: list[Info] | None = None
    value: Any = None


def id_token(value: Any) -> str:
    """The JSON text of an id, so ``1`` and ``"1"`` stay distinct (docs/protocol.md §1)."""
    if isinstance(value, _RawNumber):
        return str(value)
    if isinstance(value, bool) or value is None or isinstance(value, str | int | float):
        try:
            return orjson.dumps(value).decode()
        except TypeError:  # an int wider than 64 bits
            return json.dumps(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def decode(raw: bytes) -> Any:
    """The parsed value of a frame, or ``None`` when it holds no JSON we can read.

    Used by the views (reconstruction, replay); tolerant like :func:`classify`.
    """
    body = _body(raw)
    try:
        return orjson.loads(body)
    except (orjson.JSONDecodeError, RecursionError):
        pass
    value, _ = _slow_parse(body, [])
    for start in _json_starts(body) if value is _FAILED else ():
        value = _slow_parse(body[start:], [])[0]
        if value is not _FAILED:
            break
    return None if value is _FAILED else value


def classify(raw: bytes) -> Info:
    """Derive a frame's kind and fields; never raises.

    Every text field of the result can be stored as UTF-8: a lone surrogate (a ``\\ud800``
    escape, or a byte that is not UTF-8) is kept as its ``\\uXXXX`` escape and the frame is
    flagged ``escaped_text``. Anything else that cannot be derived leaves the field empty
    and flags ``underivable``; the bytes are always the record.
    """
    try:
        return _classify(raw)
    except Exception:
        return Info(Kind.INVALID, anomalies=["underivable"])


def _classify(raw: bytes) -> Info:
    braced = raw[:1] == b"{" and raw[-1:] == b"}"
    fast: Any = _FAILED  # the parse of a braced frame, reused below when it is not compact
    if braced:
        # Fast path: a compact object that re-serialises to exactly its own bytes has no
        # duplicate keys, no odd numbers and no escapes worth a second look.
        try:
            fast = orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
        else:
            if fast.__class__ is dict and orjson.dumps(fast) == raw:
                return _message(fast, [])
    anomalies: list[str] = []
    if raw[-1:] == b"\r":
        anomalies.append("crlf")
    if raw[:3] == BOM:
        anomalies.append("bom")
    body = raw if braced else _body(raw)
    if not body:
        anomalies.append("empty")
        return Info(Kind.INVALID, anomalies=anomalies)
    if body is not raw and _padded(raw, body):
        anomalies.append("whitespace")
    value: Any = None
    parsed = False
    try:
        value = fast if braced else orjson.loads(body)  # a braced frame was parsed above
        parsed = value is not _FAILED
        if parsed and len(body) <= _SLOW_DUPLICATE_CHECK_LIMIT and orjson.dumps(value) != body:
            slow, extra = _slow_parse(body, [])
            if extra and slow is not _FAILED:
                value = slow  # exact integers, the value a last-key-wins parser sees
            anomalies.extend(extra)
    except orjson.JSONDecodeError:
        pass
    if not parsed:
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            anomalies.append("invalid_utf8")
        value, extra = _slow_parse(body, anomalies)
        if value is _FAILED:
            for start in _json_starts(body):
                value, extra2 = _slow_parse(body[start:], [])
                if value is not _FAILED:
                    anomalies.append("leading_noise")
                    extra = extra2
                    break
        if value is _FAILED:
            if "too_deep" not in extra:
                anomalies.append("not_json")
            anomalies.extend(extra)
            return Info(Kind.INVALID, anomalies=_dedupe(anomalies))
        anomalies.extend(extra)
        if _LONE_SURROGATE.search(body):
            anomalies.append("lone_surrogate")
    if isinstance(value, list):
        anomalies.append("batch")
        if not value:
            anomalies.append("empty_batch")
        items = [_clean(_message(v, [])) for v in value]
        return Info(Kind.BATCH, anomalies=_dedupe(anomalies), items=items, value=value)
    return _clean(_message(value, _dedupe(anomalies) if len(anomalies) > 1 else anomalies))


_TEXT_FIELDS = ("method", "id", "session_id", "update_kind", "tool_call_id", "terminal_id")


def safe_text(text: str) -> str:
    """``text`` as it can be stored in UTF-8: lone surrogates become ``\\uXXXX`` escapes."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _clean(info: Info) -> Info:
    """Make the text fields of a slowly parsed message storable (the fast path's are: orjson
    only reads valid UTF-8)."""
    for name in _TEXT_FIELDS:
        v = getattr(info, name)
        if v is not None and not v.isascii():
            safe = safe_text(v)
            if safe is not v:
                setattr(info, name, safe)
                if "escaped_text" not in info.anomalies:
                    info.anomalies.append("escaped_text")
    return info


def _body(raw: bytes) -> bytes:
    if raw.startswith(BOM):
        raw = raw[3:]
    if raw[:1] in (b" ", b"\t", b"\r", b"\n") or raw[-1:] in (b" ", b"\t", b"\r", b"\n"):
        raw = raw.strip(_WS)
    return raw


def _padded(raw: bytes, body: bytes) -> bool:
    """Whitespace around the JSON beyond a BOM and a CRLF's ``\r``."""
    core = raw[3:] if raw.startswith(BOM) else raw
    if core.endswith(b"\r"):
        core = core[:-1]
    return len(core) != len(body)


def _json_starts(body: bytes, tries: int = 4) -> list[int]:
    """Where JSON might begin after leading noise: the first few ``{``/``[`` past 0."""
    starts: list[int] = []
    pos = 0
    while len(starts) < tries:
        candidates = [p for p in (body.find(b"{", pos), body.find(b"[", pos)) if p >= 0]
        if not candidates:
            break
        pos = min(candidates)
        if pos > 0:
            starts.append(pos)
        pos += 1
    return starts


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _message(value: Any, anomalies: list[str]) -> Info:
    # Hot path (one call per recorded frame): plain lookups, one Info built at the end.
    if value.__class__ is not dict:
        anomalies.append("not_jsonrpc")
        return Info(Kind.INVALID, None, None, None, None, None, None, None, anomalies, None, value)
    get = value.get
    if get("jsonrpc") != "2.0":
        anomalies.append("no_version")
    method = get("method")
    if method.__class__ is not str:
        method = None
    ident = None
    has_id = "id" in value
    if has_id:
        raw_id = value["id"]
        ident = str(raw_id) if raw_id.__class__ is int else id_token(raw_id)
    session = update_kind = tool_call = terminal = error_code = None
    if method is not None:
        kind = Kind.REQUEST if has_id else Kind.NOTIFICATION
        params = get("params")
        if params.__class__ is dict:
            session, update_kind, tool_call, terminal = _from_params(params)
    elif has_id and "error" in value:
        kind = Kind.ERROR
        error = value["error"]
        if error.__class__ is dict:
            code = error.get("code")
            if code.__class__ is int and -(2**63) <= code < 2**63:
                error_code = code
    elif has_id and "result" in value:
        kind = Kind.RESPONSE
        result = value["result"]
        if result.__class__ is dict:
            session = _str(result, "sessionId")
            terminal = _str(result, "terminalId")
    else:
        kind = Kind.INVALID
        anomalies.append("not_jsonrpc")
    return Info(
        kind,
        method,
        ident,
        session,
        update_kind,
        tool_call,
        terminal,
        error_code,
        anomalies,
        None,
        value,
    )


def _str(d: dict[str, Any], key: str) -> str | None:
    v = d.get(key)
    return v if v.__class__ is str else None


def _from_params(
    params: dict[str, Any],
) -> tuple[str | None, str | None, str | None, str | None]:
    """(session id, update kind, tool call id, terminal id) from request params."""
    get = params.get
    session = get("sessionId")
    if session.__class__ is not str:
        session = None
    update_kind = tool_call = terminal = None
    if "toolCallId" in params:
        tool_call = _str(params, "toolCallId")
    if "terminalId" in params:
        terminal = _str(params, "terminalId")
    update = get("update")
    if update.__class__ is dict:  # session/update (docs/protocol.md §5)
        update_kind = _str(update, "sessionUpdate")
        if "toolCallId" in update:
            tool_call = _str(update, "toolCallId") or tool_call
        if "terminalId" in update:
            terminal = _str(update, "terminalId") or terminal
        return session, update_kind, tool_call, terminal
    tc = get("toolCall")  # v1 session/request_permission (§6.4)
    if tc.__class__ is dict:
        tool_call = _str(tc, "toolCallId") or tool_call
    subject = get("subject")  # v2 session/request_permission (§6.4)
    if subject.__class__ is dict:
        tool_call = _str(subject, "toolCallId") or tool_call
        terminal = _str(subject, "terminalId") or terminal
        inner = subject.get("toolCall")
        if inner.__class__ is dict:
            tool_call = _str(inner, "toolCallId") or tool_call
    return session, update_kind, tool_call, terminal


class _RawNumber(str):
    """A number kept as its exact JSON text (ids wider than 64 bits, odd floats)."""


_FAILED = object()


def _slow_parse(body: bytes, _anomalies: list[str]) -> tuple[Any, list[str]]:
    """Parse with the standard library to find what orjson cannot tell us."""
    found: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        d = dict(items)
        if len(d) != len(items) and "duplicate_keys" not in found:
            found.append("duplicate_keys")
        return d

    def integer(text: str) -> Any:
        n = int(text)
        if not -(2**63) <= n < 2**64:
            if "big_int" not in found:
                found.append("big_int")
            return _RawNumber(text)
        return n

    def constant(text: str) -> float:
        if "nan" not in found:
            found.append("nan")
        return float(text)

    try:
        text = body.decode("utf-8", errors="surrogateescape")
    except UnicodeDecodeError:  # pragma: no cover - surrogateescape accepts every byte
        return _FAILED, found
    if _depth_exceeds(body, _MAX_DEPTH):
        found.append("too_deep")
        return _FAILED, found
    try:
        value = json.loads(
            text, object_pairs_hook=pairs, parse_int=integer, parse_constant=constant
        )
    except RecursionError:
        found.append("too_deep")
        return _FAILED, found
    except ValueError:
        return _FAILED, found
    return value, found


def _depth_exceeds(body: bytes, limit: int) -> bool:
    """Cheap upper bound on nesting: brackets outside strings are not told apart here,
    so count only when the raw bracket count could exceed the limit."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    depth = 0
    in_str = False
    esc = False
    for b in body:
        if in_str:
            if esc:
                esc = False
            elif b == 0x5C:
                esc = True
            elif b == 0x22:
                in_str = False
        elif b == 0x22:
            in_str = True
        elif b in (0x5B, 0x7B):
            depth += 1
            if depth > limit:
                return True
        elif b in (0x5D, 0x7D):
            depth -= 1
    return False

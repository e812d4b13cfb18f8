"""The fields of a huge frame, read from its head without parsing it (pure).

What belongs here: :func:`skim`, the classification of a frame too large to parse whole
(:data:`SKIM_ABOVE` bytes and more). Parsing a 100 MB line builds a 100 MB string and more
beside the bytes themselves; the recorder's memory must stay a small multiple of the largest
line. The envelope of a JSON-RPC message (``id``, ``method``, the session, the update kind,
the tool call) comes before the bulk (file contents, terminal output, images) in every
encoder we know of, so it is read from the first :data:`HEAD` bytes.

A key is only taken where it appears as a JSON key: ``"method":`` written inside a string
value is escaped (``\\"method\\":``) and cannot match. A key nested deeper than where it
belongs can (``"method"`` inside ``params``, say, before the envelope's own); so the frame
is flagged ``skimmed``: its derived fields are a best effort, its bytes are exact as always.
"""

from __future__ import annotations

import re

from acp_proxy.protocol.jsonrpc import Info, Kind, id_token

__all__ = ["HEAD", "SKIM_ABOVE", "skim"]

SKIM_ABOVE = 8 * 1024 * 1024
HEAD = 64 * 1024

_STRING = rb'"((?:[^"\\]|\\.){0,4096})"'
_FIELDS = {
    name: re.compile(rb'"' + name.encode() + rb'"\s*:\s*' + _STRING)
    for name in ("method", "sessionId", "sessionUpdate", "toolCallId", "terminalId")
}
_ID = re.compile(rb'"id"\s*:\s*(' + _STRING + rb"|-?\d{1,40}|null)")
_RESULT = re.compile(rb'"result"\s*:')
_ERROR = re.compile(rb'"error"\s*:\s*\{')
_CODE = re.compile(rb'"code"\s*:\s*(-?\d{1,18})\b')


def skim(head: bytes) -> Info:
    """Classify a frame from its first bytes (``head``); never raises."""
    try:
        return _skim(head)
    except Exception:
        return Info(Kind.INVALID, anomalies=["skimmed", "underivable"])


def _text(name: str, head: bytes) -> str | None:
    m = _FIELDS[name].search(head)
    if m is None:
        return None
    # the escapes of a JSON string, read as JSON would; lone surrogates stay escaped
    raw = m.group(1)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if "\\" in text:
        try:
            text = text.encode("latin-1", "backslashreplace").decode("unicode_escape")
        except (UnicodeDecodeError, UnicodeEncodeError):
            return None
        if any(0xD800 <= ord(c) <= 0xDFFF for c in text):
            text = text.encode("utf-8", "backslashreplace").decode("ascii")
    return text


def _skim(head: bytes) -> Info:
    body = head.lstrip(b" \t\r\n\xef\xbb\xbf")
    anomalies = ["skimmed"]
    if body[:1] == b"[":
        return Info(Kind.BATCH, anomalies=anomalies)
    if body[:1] != b"{":
        return Info(Kind.INVALID, anomalies=[*anomalies, "not_json"])
    method = _text("method", body)
    m = _ID.search(body)
    ident: str | None = None
    if m is not None:
        token = m.group(1)
        ident = token.decode("utf-8", "backslashreplace") if token != b"null" else "null"
        if token[:1] != b'"':
            ident = id_token(int(token)) if token != b"null" else "null"
    if method is not None:
        kind = Kind.REQUEST if ident is not None else Kind.NOTIFICATION
        error_code = None
    elif _ERROR.search(body) is not None:
        kind = Kind.ERROR
        code = _CODE.search(body)
        error_code = int(code.group(1)) if code is not None else None
    elif _RESULT.search(body) is not None:
        kind, error_code = Kind.RESPONSE, None
    else:
        return Info(Kind.INVALID, anomalies=[*anomalies, "underivable"])
    return Info(
        kind,
        method=method,
        id=ident,
        session_id=_text("sessionId", body),
        update_kind=_text("sessionUpdate", body),
        tool_call_id=_text("toolCallId", body),
        terminal_id=_text("terminalId", body),
        error_code=error_code,
        anomalies=anomalies,
    )

"""The common frame shapes, recognised by their bytes before any parse (pure, no I/O).

What belongs here: :func:`message_chunk`, which tells whether a frame is, byte for byte, the
compact ``session/update`` notification of a message chunk that agents send most of all —

``{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"S","update":``
``{"sessionUpdate":"K","content":{"type":"text","text":"T"}}}}``

— and, when it is, its session id and update kind. Most of a long capture is these, and a
full classification (a parse, a re-serialisation to prove the frame compact, the fields
read from the parsed value) costs several times the match.

A match is exact, never a guess: the session id is printable ASCII without quote or
backslash, the kind one of :data:`CHUNK_KINDS`, the text valid UTF-8 with no control byte
and no escape but those a compact serialiser writes itself (``\\"``, ``\\\\``, ``\\b``,
``\\f``, ``\\n``, ``\\r``, ``\\t``). Such a frame is compact JSON with no duplicate key,
no odd number and nothing to flag, so its derived fields are exactly those
:func:`acp_proxy.protocol.jsonrpc.classify` finds (a property test holds the two
together). Anything else — another key order, a ``messageId``, ``_meta``, a ``\\u``
escape, a frame longer than :data:`LONGEST` — does not match and is classified in full.
"""

from __future__ import annotations

import re

__all__ = ["CHUNK_KINDS", "LONGEST", "PREFIX", "message_chunk"]

PREFIX = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"'
"""How every frame :func:`message_chunk` matches begins (a cheap first test)."""

CHUNK_KINDS = ("agent_message_chunk", "agent_thought_chunk", "user_message_chunk")
"""The update kinds of a message chunk."""

_ID = rb"[\x20\x21\x23-\x5b\x5d-\x7e]*"  # printable ASCII but " and \\
_PLAIN = rb"[\x20\x21\x23-\x5b\x5d-\x7e\x80-\xff]*"  # and UTF-8's bytes (checked below)
_ESCAPE = rb'\\["\\bfnrt]'  # the escapes a compact serialiser writes as they are
_HEAD = re.compile(
    re.escape(PREFIX)
    + b"(" + _ID + b")"
    + re.escape(b'","update":{"sessionUpdate":"')
    + b"(" + b"|".join(k.encode() for k in CHUNK_KINDS) + b")"
    + re.escape(b'","content":{"type":"text","text":"')
)  # fmt: skip
_TEXT = re.compile(_PLAIN + b"(?:" + _ESCAPE + _PLAIN + b")*")
_END = b'"}}}}'

LONGEST = 1024
"""The longest frame worth matching: the text is checked a byte at a time, about 1.1 ns a
byte against 0.4 for a parse, so past about 1 KiB classifying in full is as fast (a 4 KiB
chunk: 4.8 µs matched, 3.2 µs classified). Most chunks are a few words."""

_last: tuple[bytes, tuple[str, str]] = (PREFIX + b"\x00", ("", ""))
"""The head (all before the text) of the last chunk matched and its fields: a capture's
chunks share one head, so most frames are matched by a prefix test and their text alone.
One tuple, replaced whole, so a reader never sees a head with another's fields."""


def message_chunk(raw: bytes) -> tuple[str, str] | None:
    """``(session id, update kind)`` of a frame that is exactly a compact message chunk
    (see the module's docstring), else None: classify it in full."""
    global _last
    if len(raw) > LONGEST:
        return None
    head, fields = _last
    if raw.startswith(head):
        start = len(head)
    else:
        m = _HEAD.match(raw)
        if m is None:
            return None
        start = m.end()
        fields = (m.group(1).decode("ascii"), m.group(2).decode("ascii"))
        _last = (raw[:start], fields)
    end = len(raw) - len(_END)
    if not raw.endswith(_END) or end < start or _TEXT.fullmatch(raw, start, end) is None:
        return None
    if not raw.isascii():
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return fields

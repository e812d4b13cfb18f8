"""Text from a recording, made safe to print on a terminal (pure).

What belongs here: the one rule for every string a text command prints. Anything in a
recording came from a peer and may carry terminal controls: OSC 52 writes the clipboard,
OSC 0 sets the window title, CSI 2J clears the screen, BEL rings. :func:`visible` renders
every control character as a readable escape instead — C0 (``\\x1b``, ``\\x07``, ``\\r``…)
except the line feed and tab the views lay text out with, DEL (``\\x7f``) and C1
(``\\u009b``…, which some terminals act on as ESC sequences) — so it is seen, never
interpreted. :func:`json_visible` does the same for JSON text: orjson escapes C0 in strings
but writes C1 and DEL as they are; ``\\u0085`` and friends are the same JSON value, so
nothing a script reads changes.

Only what is displayed is escaped: the recording and the exports that carry exact bytes are
untouched.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

__all__ = ["json_bytes", "json_visible", "json_visible_bytes", "visible"]

_KEPT = frozenset({"\n", "\t"})
_C1 = range(0x80, 0xA0)
_TABLE: dict[int, str] = {
    **{c: f"\\x{c:02x}" for c in range(0x20) if chr(c) not in _KEPT},
    0x0D: "\\r",
    0x7F: "\\x7f",
    **{c: f"\\u{c:04x}" for c in _C1},
}
_JSON_TABLE: dict[int, str] = {c: f"\\u{c:04x}" for c in (0x7F, *_C1)}
# In UTF-8, U+0080..U+009F are exactly the two bytes C2 80..C2 9F, and DEL is 7F.
_JSON_BYTES = re.compile(rb"\xc2[\x80-\x9f]|\x7f")


def visible(text: str) -> str:
    """``text`` with every control character but newline and tab written as an escape."""
    return text.translate(_TABLE)


_JSON_CONTROLS = re.compile("[\x7f\x80-\x9f]")


def json_visible(text: str) -> str:
    """JSON text with C1 controls and DEL written as ``\\u`` escapes (the same JSON value:
    they can only occur inside strings)."""
    if _JSON_CONTROLS.search(text) is None:  # the common case, at C speed
        return text
    return text.translate(_JSON_TABLE)


def _escape(m: re.Match[bytes]) -> bytes:
    return f"\\u{ord(m.group().decode()):04x}".encode()


def json_visible_bytes(data: bytes) -> bytes:
    """:func:`json_visible` for UTF-8 JSON bytes (what orjson returns)."""
    if b"\xc2" not in data and b"\x7f" not in data:
        return data
    return _JSON_BYTES.sub(_escape, data)


def json_bytes(value: Any, *, indent: bool = True) -> bytes:
    """``value`` as a command prints JSON: indented by two (unless told), C1 controls and DEL
    escaped (:func:`json_visible_bytes`), anything orjson cannot write as its ``str``."""
    option = orjson.OPT_INDENT_2 if indent else 0
    return json_visible_bytes(orjson.dumps(value, option=option, default=str))

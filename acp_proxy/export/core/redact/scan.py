"""Scanning JSON without parsing it: where each string of a frame lies, by path and byte span.

What belongs here: the tokenizer that finds the value leaves (and long member names) of a
frame with their paths and exact byte offsets, and decoding a string token's content for
matching while keeping the way back to its bytes. A frame that is not one balanced JSON
value scans to None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(
    rb'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\],:]|[ \t\r\n]+|[^ \t\r\n{}\[\],:"]+', re.DOTALL
)
_SCALAR = re.compile(
    rb"true|false|null|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|-?Infinity|NaN"
)
Path = tuple[str | int, ...]


@dataclass(slots=True)
class Leaf:
    """A value (or a long member name) of a frame: its path and the byte span of its text."""

    path: Path
    start: int  # the string's content in the frame (quotes excluded)
    end: int
    string: bool
    key: bool = False  # a member name (matched for shapes and known secrets only)


def scan(raw: bytes) -> list[Leaf] | None:
    """The value leaves of a JSON text with their paths and byte spans, or None when the
    bytes are not one balanced JSON value (then they are treated as opaque text)."""
    leaves: list[Leaf] = []
    stack: list[list[object]] = []  # ["o", key, expecting_key] or ["a", index]
    path: list[str | int] = []
    pos, n, top_values = 0, len(raw), 0
    match = _TOKEN.match
    while pos < n:
        m = match(raw, pos)
        if m is None:
            return None
        tok = m.group()
        pos = m.end()
        c = tok[0]
        if c in b" \t\r\n":
            continue
        top = stack[-1] if stack else None
        if c in b"{[":
            if top is None:
                top_values += 1
            elif top[0] == "o":
                if top[2]:
                    return None
                path.append(str(top[1]))
            else:
                path.append(int(top[1]))  # type: ignore[call-overload]
            stack.append(["o", None, True] if c == ord("{") else ["a", 0])
            continue
        if c in b"}]":
            if top is None or top[0] != ("o" if c == ord("}") else "a"):
                return None
            stack.pop()
            if stack:
                path.pop()
            continue
        if c == ord(","):
            if top is None:
                return None
            if top[0] == "o":
                top[2] = True
            else:
                top[1] = int(top[1]) + 1  # type: ignore[call-overload]
            continue
        if c == ord(":"):
            if top is None or top[0] != "o" or not top[2]:
                return None
            top[2] = False
            continue
        string = c == ord('"')
        if not string and _SCALAR.fullmatch(tok) is None:
            return None  # a bare word: not JSON
        if top is not None and top[0] == "o" and top[2]:
            if not string:
                return None
            top[1] = key_text(tok[1:-1])
            if len(tok) > 8:  # a name long enough to hold a secret
                at = (*path, str(top[1]))
                leaves.append(Leaf(at, m.start() + 1, pos - 1, True, key=True))
            continue
        if top is None:
            top_values += 1
            here: Path = ()
        elif top[0] == "o":
            here = (*path, str(top[1]))
        else:
            here = (*path, int(top[1]))  # type: ignore[call-overload]
        leaves.append(
            Leaf(here, m.start() + 1 if string else m.start(), pos - 1 if string else pos, string)
        )
    if stack or top_values != 1:
        return None
    return leaves


def key_text(content: bytes) -> str:
    if b"\\" not in content:
        return content.decode("utf-8", "replace")
    text, _ = decode(content)
    return text


_ESC = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\", "/": "/"}


def decode(content: bytes) -> tuple[str, list[int] | None]:
    """A string token's content as text for matching, and where each character starts in
    ``content`` (None: one byte per character). Bytes are read as Latin-1, so any byte
    sequence is text here and offsets stay exact; escapes are decoded."""
    if b"\\" not in content:
        return content.decode("latin-1"), None
    s = content.decode("latin-1")
    out: list[str] = []
    offsets: list[int] = []
    i, n = 0, len(s)
    while i < n:
        ch = s[i]
        if ch != "\\" or i + 1 >= n:
            out.append(ch)
            offsets.append(i)
            i += 1
            continue
        e = s[i + 1]
        if e in _ESC:
            out.append(_ESC[e])
            offsets.append(i)
            i += 2
            continue
        if e == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", s[i + 2 : i + 6]):
            code = int(s[i + 2 : i + 6], 16)
            step = 6
            if 0xD800 <= code < 0xDC00 and s[i + 6 : i + 8] == "\\u":
                low = s[i + 8 : i + 12]
                if re.fullmatch(r"[dD][c-fC-F][0-9a-fA-F]{2}", low):
                    code = 0x10000 + ((code - 0xD800) << 10) + (int(low, 16) - 0xDC00)
                    step = 12
            out.append(chr(code))
            offsets.append(i)
            i += step
            continue
        out.append(ch)
        offsets.append(i)
        i += 1
    offsets.append(n)
    return "".join(out), offsets


def raw_span(offsets: list[int] | None, start: int, end: int) -> tuple[int, int]:
    if offsets is None:
        return start, end
    return offsets[start], offsets[end]

"""The words of a filter expression, each with the column it starts at (1-based), so an
error can point at the mistake."""

from __future__ import annotations

from dataclasses import dataclass

from acp_proxy.errors import FilterError

__all__ = ["Token", "tokens"]

_STOP = " \t\r\n()"
_OPERATORS = {"and": "and", "&&": "and", "or": "or", "||": "or", "not": "not", "!": "not"}


@dataclass(frozen=True, slots=True)
class Token:
    """``kind``: ``(``, ``)``, ``and``, ``or``, ``not``, ``word`` (maybe ``key:value``),
    ``quoted`` (a phrase in quotes) or ``regex`` (``/.../``); ``text`` is its value with
    quotes and escapes resolved, ``key`` the key of a ``key:value`` word."""

    kind: str
    text: str
    col: int
    key: str | None = None


def _quoted(src: str, i: int, close: str) -> tuple[str, int]:
    """The text between ``src[i]`` (an opening quote or slash) and ``close``; a backslash
    keeps the next character (for a regex: the pair, as the pattern wrote it)."""
    out: list[str] = []
    j = i + 1
    while j < len(src):
        c = src[j]
        if c == "\\" and j + 1 < len(src):
            nxt = src[j + 1]
            out.append(nxt if close == '"' or nxt == "/" else c + nxt)
            j += 2
            continue
        if c == close:
            return "".join(out), j + 1
        out.append(c)
        j += 1
    what = "quote" if close == '"' else "slash ending the regular expression"
    raise FilterError(f"no closing {what} for the one at column {i + 1}")


def _word(src: str, i: int) -> tuple[Token, int]:
    """A bare word from ``i``; ``key:value`` when it has a colon (the value may be
    quoted)."""
    j = i
    while j < len(src) and src[j] not in _STOP and src[j] != ":":
        j += 1
    if j < len(src) and src[j] == ":":
        key = src[i:j]
        if j + 1 < len(src) and src[j + 1] in '"/' and (src[j + 1] == '"' or key == "re"):
            close = src[j + 1]
            value, end = _quoted(src, j + 1, close)
            return Token("word", value, i + 1, key), end
        end = j + 1
        while end < len(src) and src[end] not in _STOP:
            end += 1
        return Token("word", src[j + 1 : end], i + 1, key), end
    return Token("word", src[i:j], i + 1), j


def tokens(src: str) -> list[Token]:
    """The tokens of ``src``, in order."""
    out: list[Token] = []
    i = 0
    while i < len(src):
        c = src[i]
        if c in " \t\r\n":
            i += 1
        elif c in "()":
            out.append(Token(c, c, i + 1))
            i += 1
        elif src.startswith(("&&", "||"), i):
            out.append(Token(_OPERATORS[src[i : i + 2]], src[i : i + 2], i + 1))
            i += 2
        elif c == "!" or (c == "-" and i + 1 < len(src) and src[i + 1] not in _STOP):
            out.append(Token("not", c, i + 1))
            i += 1
        elif c == '"':
            text, i2 = _quoted(src, i, '"')
            out.append(Token("quoted", text, i + 1))
            i = i2
        elif c == "/":
            text, i2 = _quoted(src, i, "/")
            out.append(Token("regex", text, i + 1))
            i = i2
        else:
            tok, i = _word(src, i)
            if tok.key is None and tok.text in _OPERATORS:
                tok = Token(_OPERATORS[tok.text], tok.text, tok.col)
            out.append(tok)
    return out

"""A filter expression read into a tree: a recursive descent over the tokens of
:mod:`acp_proxy.filters.lexer`.

::

    expr    := and ( ("or" | "||") and )*
    and     := unary ( ("and" | "&&")? unary )*      words side by side: and
    unary   := ("not" | "!" | "-") unary | "(" expr ")" | term
    term    := KEY ":" VALUE | WORD | "PHRASE" | /REGEX/
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from acp_proxy.errors import FilterError
from acp_proxy.filters.lexer import Token, tokens

__all__ = ["KEYS", "And", "Expr", "Match", "Not", "Or", "parse"]

KEYS: dict[str, str] = {
    "method": "the method, a glob (* any text, ? one character): method:session/*",
    "dir": "the direction: dir:c2a (client to agent) or dir:a2c",
    "kind": "request, notification, response, error, batch or invalid",
    "session": "the ACP session id, exactly",
    "update": "the session/update kind, a glob: update:tool_call*",
    "id": 'the JSON-RPC id: id:7 (the number 7 or the string "7")',
    "tool": "the tool call id, exactly",
    "terminal": "the terminal id, exactly",
    "error": "an error answer: error:any, or its code: error:-32603",
    "anomaly": "a frame with anomalies: anomaly:any, or one by name: anomaly:orphan",
    "text": "the frame's bytes contain this text (ignoring case); a bare word is the same",
    "re": "the frame's bytes match this regular expression: re:/time(d|out)/",
}
"""The keys of ``key:value`` terms, with what each one tests (the ``?`` help lists them)."""

MAX_TERMS = 100
"""The most terms (and nesting levels) an expression may have: far more than a person
writes, and few enough for any SQL engine's limits."""

_ALIASES = {"direction": "dir", "regex": "re", "anomalous": "anomaly"}
_KINDS = ("request", "notification", "response", "error", "batch", "invalid")


@dataclass(frozen=True, slots=True)
class Match:
    """One test: ``key`` (of :data:`KEYS`) against ``value``."""

    key: str
    value: str
    col: int


@dataclass(frozen=True, slots=True)
class Not:
    part: Expr


@dataclass(frozen=True, slots=True)
class And:
    parts: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Or:
    parts: tuple[Expr, ...]


Expr = Match | Not | And | Or


def _check(key: str, value: str, col: int) -> None:
    """Refuse a value its key cannot take, pointing at it."""
    where = f"at column {col}"
    if value == "" and key != "text":
        raise FilterError(f"{key}: needs a value {where}")
    if key == "dir" and value not in ("c2a", "a2c"):
        raise FilterError(f"dir:{value} {where}: the direction is c2a or a2c")
    if key == "kind" and value not in _KINDS:
        raise FilterError(f"kind:{value} {where}: the kind is one of {', '.join(_KINDS)}")
    if key == "error" and value not in ("any", "*") and not re.fullmatch(r"-?\d{1,18}", value):
        raise FilterError(f"error:{value} {where}: give a code (error:-32603) or error:any")
    if key == "re":
        try:
            re.compile(value)
        except re.error as e:
            raise FilterError(f"re:{value} {where} is not a regular expression: {e}") from e


class _Parser:
    def __init__(self, src: str) -> None:
        self.src = src
        self.toks = tokens(src)
        self.i = 0
        self.depth = 0
        self.terms = 0

    def peek(self) -> Token | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> Token:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def expr(self) -> Expr:
        parts = [self.conj()]
        while (tok := self.peek()) is not None and tok.kind == "or":
            self.take()
            parts.append(self.conj())
        return parts[0] if len(parts) == 1 else Or(tuple(parts))

    def conj(self) -> Expr:
        parts = [self.unary()]
        while (tok := self.peek()) is not None and tok.kind not in ("or", ")"):
            if tok.kind == "and":
                self.take()
            parts.append(self.unary())
        return parts[0] if len(parts) == 1 else And(tuple(parts))

    def unary(self) -> Expr:
        tok = self.peek()
        if tok is None:
            end = len(self.src) + 1
            raise FilterError(f"the expression ends where a term was expected (column {end})")
        self.take()
        if tok.kind in ("not", "("):
            self.depth += 1
            if self.depth > MAX_TERMS:
                raise FilterError(f"nested too deep at column {tok.col} (at most {MAX_TERMS})")
        if tok.kind == "not":
            return Not(self.unary())
        if tok.kind == "(":
            inner = self.expr()
            close = self.peek()
            if close is None or close.kind != ")":
                raise FilterError(f"no closing parenthesis for the one at column {tok.col}")
            self.take()
            return inner
        if tok.kind in (")", "and", "or"):
            raise FilterError(f"unexpected {tok.text!r} at column {tok.col}")
        return self.term(tok)

    def term(self, tok: Token) -> Match:
        self.terms += 1
        if self.terms > MAX_TERMS:
            raise FilterError(f"too many terms at column {tok.col} (at most {MAX_TERMS})")
        if tok.kind == "regex":
            _check("re", tok.text, tok.col)
            return Match("re", tok.text, tok.col)
        if tok.kind == "quoted" or tok.key is None:
            return Match("text", tok.text, tok.col)
        key = _ALIASES.get(tok.key, tok.key)
        if key not in KEYS:
            raise FilterError(
                f"unknown key {tok.key!r} at column {tok.col} (keys: {', '.join(KEYS)};"
                ' put text with a colon in quotes: "a:b")'
            )
        _check(key, tok.text, tok.col)
        return Match(key, tok.text, tok.col)


def parse(src: str) -> Expr | None:
    """The tree of ``src``; None for an empty expression (every frame passes). A mistake
    raises :class:`~acp_proxy.errors.FilterError` naming its column."""
    p = _Parser(src)
    if not p.toks:
        return None
    tree = p.expr()
    extra = p.peek()
    if extra is not None:
        raise FilterError(f"unexpected {extra.text!r} at column {extra.col}")
    return tree

"""The rules of redaction: which values look secret.

What belongs here: the built-in credential shapes (regexes over a string's text), the
optional classes, the test of a member (or header, or variable) name that holds a secret,
and reading a ``--redact-rules`` file into :class:`Rules`. Nothing here walks a frame.
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass, field

from acp_proxy.errors import UsageError

# Optional classes: whole kinds of content, off unless asked for.
CLASSES = ("files", "text", "paths")


@dataclass(frozen=True, slots=True)
class Shape:
    """A credential shape: ``regex`` over a string's text; ``group`` is the part replaced."""

    name: str
    regex: re.Pattern[str]
    group: int = 0
    anchors: tuple[str, ...] = ()  # lower-case text every match contains (none: always try)


def _shape(
    name: str, pattern: str, anchors: tuple[str, ...], group: int = 0, flags: int = 0
) -> Shape:
    return Shape(name, re.compile(pattern, re.ASCII | flags), group, anchors)


_B64URL = r"[A-Za-z0-9_-]"
SHAPES: tuple[Shape, ...] = (
    _shape(
        "private-key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?-----END (?:[A-Z0-9]+ )*"
        r"PRIVATE KEY(?: BLOCK)?-----",
        ("private key",),
        flags=re.DOTALL,
    ),
    _shape("jwt", rf"\beyJ{_B64URL}{{4,}}\.eyJ{_B64URL}{{4,}}\.{_B64URL}{{8,}}", ("eyj",)),
    _shape("anthropic-key", r"\bsk-ant-[A-Za-z0-9_-]{20,}", ("sk-ant-",)),
    _shape("openai-key", r"\bsk-(?:proj-|svcacct-|admin-|or-v1-)?[A-Za-z0-9_-]{20,}", ("sk-",)),
    _shape("google-key", r"\bAIza[0-9A-Za-z_-]{35}", ("aiza",)),
    _shape("huggingface-token", r"\bhf_[A-Za-z0-9]{30,}", ("hf_",)),
    _shape("stripe-key", r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}", ("_live_", "_test_")),
    _shape(
        "github-token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    _shape("gitlab-token", r"\bglpat-[A-Za-z0-9_-]{20,}", ("glpat-",)),
    _shape("slack-token", r"\bxox[abposre]-[A-Za-z0-9-]{10,}", ("xox",)),
    _shape(
        "slack-webhook",
        r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}",
        ("hooks.slack.com",),
    ),
    _shape(
        "aws-access-key",
        r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[A-Z0-9]{16}\b",
        ("akia", "asia", "agpa", "aida", "aroa"),
    ),
    _shape(
        "aws-secret-key",
        r"(?i:aws_secret_access_key|aws_secret_key|secretaccesskey)[\"']?\s*[:=]\s*[\"']?"
        r"([A-Za-z0-9/+=]{40})",
        ("aws_secret", "secretaccesskey"),
        group=1,
    ),
    _shape(
        "bearer",
        r"(?i:\b(?:bearer|basic|token)\s+)([A-Za-z0-9._~+/=-]{16,})",
        ("bearer", "basic", "token"),
        group=1,
    ),
    _shape(
        "url-userinfo",
        r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s/:@\"]+:([^\s/@\"]+)@",
        ("://",),
        group=1,
    ),
    _shape(
        "url-secret-param",
        r"[?&](?i:access_token|refresh_token|id_token|token|api_key|apikey|key|secret|"
        r"client_secret|password|passwd|sig|signature|x-amz-signature|x-amz-credential|"
        r"x-amz-security-token|code|auth)=([^&#\s\"]+)",
        ("=",),
        group=1,
    ),
)
HOME_SHAPES = (
    _shape(
        "home",
        r"(?:^|(?<=[\s\"'=:(\[]))(?:/home|/Users)/([A-Za-z0-9._-]+)",
        ("/home/", "/users/"),
        group=1,
    ),
    _shape(
        "home",
        r"\b[A-Za-z]:\\(?:Users|Documents and Settings)\\([^\\/\s\"]+)",
        (":\\",),
        group=1,
    ),
)

_SECRET_WORDS = frozenset(
    {
        "token",
        "key",
        "secret",
        "password",
        "passwd",
        "pwd",
        "passphrase",
        "authorization",
        "cookie",
        "sig",
        "signature",
        "credential",
        "credentials",
        "apikey",
        "bearer",
        "otp",
        "jwt",
    }
)
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")


@functools.lru_cache(maxsize=4096)
def secret_name(name: str) -> bool:
    """Does a member (or header, or variable) name look like it holds a secret?"""
    words = {w.lower() for w in _WORD.findall(name)}
    if words & _SECRET_WORDS:
        return True
    flat = re.sub(r"[^a-z]", "", name.lower())
    return any(w in flat for w in ("apikey", "accesskey", "authtoken", "privatekey", "password"))


# -- rules files ---------------------------------------------------------------------------


@dataclass(slots=True)
class Rules:
    """Rules of a ``--redact-rules`` file: value patterns and member-name patterns."""

    shapes: list[Shape] = field(default_factory=list)
    keys: list[tuple[str, re.Pattern[str]]] = field(default_factory=list)


def parse_rules(text: str, source: str) -> Rules:
    """Read a rules file (TOML; the format is in docs/sharing.md); bad input is one
    :class:`UsageError` naming the file and the rule."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{source}: not a rules file ({e})") from e
    rules = Rules()
    unknown = set(doc) - {"pattern", "key"}
    if unknown:
        raise UsageError(f"{source}: unknown table {sorted(unknown)[0]!r} (pattern or key)")
    for table in ("pattern", "key"):
        entries = doc.get(table, [])
        if not isinstance(entries, list):
            raise UsageError(f"{source}: [[{table}]] must be an array of tables")
        for n, entry in enumerate(entries, 1):
            where = f"{source}: {table} {n}"
            if not isinstance(entry, dict):
                raise UsageError(f"{where}: not a table")
            name, regex = entry.get("name"), entry.get("regex")
            if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]{1,40}", name):
                raise UsageError(f"{where}: name must be 1-40 letters, digits, '-', '_' or '.'")
            if not isinstance(regex, str) or not regex:
                raise UsageError(f"{where}: regex must be a non-empty string")
            group = entry.get("group", 0)
            extra = set(entry) - {"name", "regex", "group"}
            if extra:
                raise UsageError(f"{where}: unknown field {sorted(extra)[0]!r}")
            try:
                compiled = re.compile(regex)
            except re.error as e:
                raise UsageError(f"{where}: bad regex ({e})") from e
            if table == "key":
                rules.keys.append((name, compiled))
                continue
            if not isinstance(group, int) or not 0 <= group <= compiled.groups:
                raise UsageError(f"{where}: group must be 0..{compiled.groups}")
            if compiled.search("") is not None and compiled.fullmatch("") is not None:
                raise UsageError(f"{where}: regex matches the empty string")
            rules.shapes.append(Shape(name, compiled, group))
    return rules

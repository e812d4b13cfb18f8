"""Redaction of a capture on its way out (pure: frames in, redacted frames and findings out).

What belongs here: deciding which values of a capture are secret and replacing them with
placeholders, for every export format (``export --redact``, ``share``). Nothing here reads
the database or touches forwarding: it takes the frames an export is about to write.

How it stays faithful (docs/sharing.md):

- Only bytes *inside JSON string tokens* change, and only to placeholder text
  (``[redacted:RULE:N]``: plain ASCII, nothing JSON must escape). Every other byte of the
  frame — whitespace, key order, escapes, numbers of any size, invalid UTF-8 elsewhere — is
  kept, so valid JSON stays valid and a frame with nothing secret comes out identical.
- The same secret gets the same placeholder everywhere in the capture (a stable
  pseudonym): the first rule that found it names it, counted per rule in order of discovery.
- A secret split across consecutive chunks of one message (``agent_message_chunk`` …) is
  found in the joined text: the first piece becomes the placeholder, later pieces lose
  their part of it.
- A frame that is not JSON (noise on stdout, a binary WebSocket message) has the
  credential shapes and the known secrets replaced in its bytes; the member-name rules
  cannot apply to it. Such frames are counted in :attr:`Redactor.notes`.
- Each changed frame keeps the sha256 of its original bytes (:attr:`Redacted.sha256`), so
  the owner of the capture can prove which frame it was.
"""

from __future__ import annotations

import functools
import hashlib
import re
import tomllib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from acp_proxy.errors import UsageError
from acp_proxy.protocol.frames import Direction, Frame

__all__ = [
    "CLASSES",
    "Redacted",
    "Redactor",
    "Shape",
    "parse_rules",
]

# Optional classes: whole kinds of content, off unless asked for.
CLASSES = ("files", "text", "paths")
_LITERAL_MIN = 8  # secrets found by a member name are searched for everywhere from this length


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
_HOME = (
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


# -- scanning JSON without parsing it ------------------------------------------------------

_TOKEN = re.compile(
    rb'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\],:]|[ \t\r\n]+|[^ \t\r\n{}\[\],:"]+', re.DOTALL
)
_SCALAR = re.compile(
    rb"true|false|null|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|-?Infinity|NaN"
)
Path = tuple[str | int, ...]


@dataclass(slots=True)
class _Leaf:
    path: Path
    start: int  # the string's content in the frame (quotes excluded)
    end: int
    string: bool
    key: bool = False  # a member name (matched for shapes and known secrets only)


def _scan(raw: bytes) -> list[_Leaf] | None:
    """The value leaves of a JSON text with their paths and byte spans, or None when the
    bytes are not one balanced JSON value (then they are treated as opaque text)."""
    leaves: list[_Leaf] = []
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
            top[1] = _key_text(tok[1:-1])
            if len(tok) > 8:  # a name long enough to hold a secret
                at = (*path, str(top[1]))
                leaves.append(_Leaf(at, m.start() + 1, pos - 1, True, key=True))
            continue
        if top is None:
            top_values += 1
            here: Path = ()
        elif top[0] == "o":
            here = (*path, str(top[1]))
        else:
            here = (*path, int(top[1]))  # type: ignore[call-overload]
        leaves.append(
            _Leaf(here, m.start() + 1 if string else m.start(), pos - 1 if string else pos, string)
        )
    if stack or top_values != 1:
        return None
    return leaves


def _key_text(content: bytes) -> str:
    if b"\\" not in content:
        return content.decode("utf-8", "replace")
    text, _ = _decode(content)
    return text


_ESC = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\", "/": "/"}


def _decode(content: bytes) -> tuple[str, list[int] | None]:
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


def _raw_span(offsets: list[int] | None, start: int, end: int) -> tuple[int, int]:
    if offsets is None:
        return start, end
    return offsets[start], offsets[end]


# -- the redactor --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Redacted:
    """A frame as it goes out: ``sha256`` of the original bytes and the rules that changed
    it when it was changed, else None and ``()``."""

    frame: Frame
    sha256: str | None = None
    rules: tuple[str, ...] = ()


@dataclass(slots=True)
class _Message:
    method: str | None = None
    kind: str | None = None
    update: str | None = None
    session: str | None = None
    owner: str | None = None  # toolCallId / terminalId of a chunk
    token: bytes | None = None
    has_method: bool = False
    has_id: bool = False


_AUTH_KEEP = frozenset({"methodId", "type", "sessionId", "jsonrpc", "id", "method"})
_CHUNK_TEXT_KINDS = ("agent_message_chunk", "agent_thought_chunk", "user_message_chunk")


class Redactor:
    """Redact the frames of one capture: :meth:`redact` (once), then :attr:`counts` (rule
    -> replacements), :attr:`distinct` (rule -> distinct values) and :attr:`notes`."""

    def __init__(self, classes: Iterable[str] = (), rules: Rules | None = None) -> None:
        self.classes = frozenset(classes)
        bad = self.classes - set(CLASSES)
        if bad:
            raise UsageError(
                f"no redaction class {sorted(bad)[0]!r} (choose from {', '.join(CLASSES)})"
            )
        self.rules = rules or Rules()
        self.shapes: list[Shape] = [*SHAPES, *self.rules.shapes]
        if "paths" in self.classes:
            self.shapes.extend(_HOME)
        anchors = sorted({a for shape in self.shapes for a in shape.anchors}, key=len, reverse=True)
        self._anchors = re.compile("|".join(map(re.escape, anchors))) if anchors else None
        self._implied = {a: {b for b in anchors if b in a} for a in anchors}
        self._short: dict[str, list[tuple[int, int, str, str]]] = {}
        self.names: dict[str, str] = {}  # secret text -> placeholder
        self._per_rule: Counter[str] = Counter()
        self.counts: Counter[str] = Counter()
        self.distinct: Counter[str] = Counter()
        self.notes: list[str] = []
        self._literals: re.Pattern[str] | None = None

    # -- placeholders ----------------------------------------------------------------------

    def placeholder(self, secret: str, rule: str) -> str:
        name = self.names.get(secret)
        if name is None:
            self._per_rule[rule] += 1
            self.distinct[rule] += 1
            name = self.names[secret] = f"[redacted:{rule}:{self._per_rule[rule]}]"
        return name

    def _rule_of(self, placeholder: str) -> str:
        return placeholder[len("[redacted:") :].rsplit(":", 1)[0]

    # -- matching text ---------------------------------------------------------------------

    def _shape_hits(self, text: str) -> list[tuple[int, int, str, str]]:
        """(start, end, secret, rule) of every credential shape in ``text``; a shape is
        tried only when the text holds one of its anchors (one search of all anchors rules
        most strings out at once). Short strings repeat (methods, kinds, ids): their
        answers are kept."""
        short = len(text) <= 64
        if short:
            known = self._short.get(text)
            if known is not None:
                return known
        found: list[tuple[int, int, str, str]] = []
        present: set[str] = set()
        if self._anchors is not None:  # an anchor inside a longer one found counts too
            for a in set(self._anchors.findall(text.lower())):
                present |= self._implied[a]
        for shape in self.shapes:
            if shape.anchors and present.isdisjoint(shape.anchors):
                continue
            for m in shape.regex.finditer(text):
                s, e = m.span(shape.group)
                if e > s and not text[s:e].startswith("[redacted:"):
                    found.append((s, e, text[s:e], shape.name))
        if short and len(self._short) < 100_000:
            self._short[text] = found
        return found

    def _find(
        self, text: str, hits: list[tuple[int, int, str, str]] | None = None
    ) -> list[tuple[int, int, str, str]]:
        """Non-overlapping (start, end, secret, rule) in ``text``: shapes (``hits`` when
        already known) and known secrets."""
        found = list(self._shape_hits(text) if hits is None else hits)
        if self._literals is not None:
            for m in self._literals.finditer(text):
                secret = m.group()
                found.append((m.start(), m.end(), secret, self._rule_of(self.names[secret])))
        if len(found) > 1:
            found.sort(key=lambda f: (f[0], f[0] - f[1]))
            kept: list[tuple[int, int, str, str]] = []
            for f in found:
                if not kept or f[0] >= kept[-1][1]:
                    kept.append(f)
            found = kept
        return found

    def text(self, value: str) -> str:
        """A string outside the frames (a derived field, a capture's metadata), redacted
        with the same placeholders."""
        out, last = [], 0
        for s, e, secret, rule in self._find(value):
            out.append(value[last:s])
            out.append(self.placeholder(secret, rule))
            last = e
        return value if not out else "".join(out) + value[last:]

    # -- the capture -----------------------------------------------------------------------

    def redact(self, frames: Sequence[Frame]) -> list[Redacted]:
        scans = [_scan(f.raw) for f in frames]
        messages = self._contexts(frames, scans)
        # pass 1: whole values chosen by where they are (member names, methods, classes),
        # and the secrets of every shape, named in order of appearance
        whole: list[dict[int, str]] = []
        hits: dict[tuple[int, int], list[tuple[int, int, str, str]]] = {}
        for k, (f, leaves, msgs) in enumerate(zip(frames, scans, messages, strict=True)):
            chosen: dict[int, str] = {}
            if leaves is None:
                hits[k, -1] = self._shape_hits(f.raw.decode("latin-1"))
                for _s, _e, secret, shape in hits[k, -1]:
                    self.placeholder(secret, shape)
            for i, leaf in enumerate(leaves or ()):
                if not leaf.string:
                    continue
                rule = None if leaf.key else self._whole_rule(leaf.path, msgs, leaves or [], f.raw)
                text, _ = _decode(f.raw[leaf.start : leaf.end])
                if rule is None:
                    hits[k, i] = self._shape_hits(text)
                    for _s, _e, secret, found in hits[k, i]:
                        self.placeholder(secret, found)
                elif text and not text.startswith("[redacted:"):
                    chosen[i] = rule
                    self.placeholder(text, rule)
            whole.append(chosen)
        literals = sorted(
            (s for s, p in self.names.items() if len(s) >= _LITERAL_MIN and not _optional(p)),
            key=len,
            reverse=True,
        )
        if literals:
            self._literals = re.compile("|".join(re.escape(s) for s in literals))
        # pass 2: text streams split across chunks
        edits: list[list[tuple[int, int, bytes, str]]] = [[] for _ in frames]
        in_stream = self._streams(frames, scans, messages, whole, edits)
        # pass 3: every other string (and opaque frames), then apply
        out: list[Redacted] = []
        opaque = 0
        for k, (f, leaves, chosen) in enumerate(zip(frames, scans, whole, strict=True)):
            mine = edits[k]
            if leaves is None:
                opaque += 1
                text = f.raw.decode("latin-1")
                for s, e, secret, rule in self._find(text, hits.get((k, -1))):
                    mine.append((s, e, self.placeholder(secret, rule).encode(), rule))
            else:
                for i, leaf in enumerate(leaves):
                    if not leaf.string or (k, i) in in_stream:
                        continue
                    content = f.raw[leaf.start : leaf.end]
                    text, offsets = _decode(content)
                    if i in chosen:
                        name = self.names.get(text)
                        if name is not None:
                            mine.append((leaf.start, leaf.end, name.encode(), self._rule_of(name)))
                        continue
                    for s, e, secret, rule in self._find(text, hits.get((k, i))):
                        a, b = _raw_span(offsets, s, e)
                        mine.append(
                            (
                                leaf.start + a,
                                leaf.start + b,
                                self.placeholder(secret, rule).encode(),
                                rule,
                            )
                        )
            out.append(self._apply(f, mine))
        if opaque:
            self.notes.append(
                f"{opaque} frame(s) are not JSON: credential shapes and known secrets were "
                "replaced in their bytes; rules by member name could not apply"
            )
        return out

    def _apply(self, f: Frame, edits: list[tuple[int, int, bytes, str]]) -> Redacted:
        if not edits:
            return Redacted(f)
        edits.sort(key=lambda e: (e[0], e[1]))
        parts, last, rules = [], 0, []
        for s, e, new, rule in edits:
            if s < last:
                continue
            parts.append(f.raw[last:s])
            parts.append(new)
            last = e
            if new:
                self.counts[rule] += 1
            if rule not in rules:
                rules.append(rule)
        parts.append(f.raw[last:])
        raw = b"".join(parts)
        if raw == f.raw:
            return Redacted(f)
        return Redacted(replace(f, raw=raw), hashlib.sha256(f.raw).hexdigest(), tuple(rules))

    # -- what each message is --------------------------------------------------------------

    def _contexts(
        self, frames: Sequence[Frame], scans: list[list[_Leaf] | None]
    ) -> list[dict[Path, _Message]]:
        """Per frame, its messages by root path (``()``, or ``(i,)`` in a batch), with the
        method (a response's from its request), update kind, session and owner."""
        pending: dict[tuple[Direction, bytes], str] = {}
        out: list[dict[Path, _Message]] = []
        for f, leaves in zip(frames, scans, strict=True):
            msgs: dict[Path, _Message] = {}
            for leaf in leaves or ():
                if leaf.key:
                    continue
                root, rel = _split(leaf.path)
                m = msgs.setdefault(root, _Message())
                value = f.raw[leaf.start : leaf.end]
                if rel == ("method",):
                    m.has_method = True
                    m.method = _key_text(value) if leaf.string else None
                elif rel == ("id",):
                    m.has_id = True
                    m.token = f.raw[leaf.start - 1 : leaf.end + 1] if leaf.string else value
                elif rel == ("params", "update", "sessionUpdate") and leaf.string:
                    m.update = _key_text(value)
                elif rel == ("params", "sessionId") and leaf.string:
                    m.session = _key_text(value)
                elif rel in (
                    ("params", "update", "toolCallId"),
                    ("params", "update", "terminalId"),
                ):
                    m.owner = _key_text(value)
            for m in msgs.values():
                if m.has_method and m.token is not None:
                    m.kind = "request"
                    if m.method is not None:
                        pending[(f.direction, m.token)] = m.method
                elif m.has_method:
                    m.kind = "notification"
                elif m.token is not None:
                    m.kind = "response"
                    m.method = pending.pop((f.direction.opposite, m.token), None)
            out.append(msgs)
        return out

    def _whole_rule(
        self, path: Path, msgs: dict[Path, _Message], leaves: list[_Leaf], raw: bytes
    ) -> str | None:
        root, rel = _split(path)
        m = msgs.get(root) or _Message()
        keys = [p for p in rel if isinstance(p, str)]
        if not keys:
            return None
        last = rel[-1]
        if "env" in keys and last != "name":
            return "env"
        if "headers" in keys and last != "name":
            return "header"
        method = m.method or ""
        auth = method == "authenticate" or method.startswith("auth/")
        if auth and rel[0] in ("params", "result") and keys[-1] not in _AUTH_KEEP:
            return "auth"
        if "authMethods" in keys and "args" in keys:
            return "auth"
        for name, regex in self.rules.keys:
            if any(regex.search(k) for k in keys):
                return name
        if any(secret_name(k) for k in keys if k != "_meta"):
            return "secret-name"
        if last == "value" and _sibling_secret_name(path, leaves, raw):
            return "secret-name"
        if "files" in self.classes and _is_file_content(rel, method, m):
            return "files"
        if "text" in self.classes and _is_text(rel, method, m):
            return "text"
        return None

    def _streams(
        self,
        frames: Sequence[Frame],
        scans: list[list[_Leaf] | None],
        messages: list[dict[Path, _Message]],
        whole: list[dict[int, str]],
        edits: list[list[tuple[int, int, bytes, str]]],
    ) -> set[tuple[int, int]]:
        """Consecutive message chunks of one stream, matched as one text: a secret split
        across chunks is found. Returns the (frame, leaf) pairs handled here."""
        streams: dict[tuple[object, ...], list[tuple[int, int, str, list[int] | None]]] = {}
        for k, (f, leaves, msgs) in enumerate(zip(frames, scans, messages, strict=True)):
            for i, leaf in enumerate(leaves or ()):
                if not leaf.string or leaf.key or i in whole[k]:
                    continue
                root, rel = _split(leaf.path)
                m = msgs.get(root)
                if m is None or m.update is None or not m.update.endswith("_chunk"):
                    continue
                if rel[-1:] != ("text",):
                    continue
                key = (f.direction, m.session, m.update, m.owner, rel)
                text, offsets = _decode(f.raw[leaf.start : leaf.end])
                streams.setdefault(key, []).append((k, i, text, offsets))
        handled: set[tuple[int, int]] = set()
        for pieces in streams.values():
            joined = "".join(p[2] for p in pieces)
            bounds, at = [], 0
            for p in pieces:
                bounds.append(at)
                at += len(p[2])
            for s, e, secret, rule in self._find(joined):
                name = self.placeholder(secret, rule).encode()
                first = True
                for (k, i, text, offsets), b in zip(pieces, bounds, strict=True):
                    lo, hi = max(s, b), min(e, b + len(text))
                    if lo >= hi:
                        continue
                    leaf = (scans[k] or [])[i]
                    a, z = _raw_span(offsets, lo - b, hi - b)
                    edits[k].append((leaf.start + a, leaf.start + z, name if first else b"", rule))
                    first = False
            handled.update((k, i) for k, i, _, _ in pieces)
        return handled


def _split(path: Path) -> tuple[Path, Path]:
    if path and isinstance(path[0], int):
        return path[:1], path[1:]
    return (), path


def _optional(placeholder: str) -> bool:
    return any(placeholder.startswith(f"[redacted:{c}:") for c in CLASSES)


def _sibling_secret_name(path: Path, leaves: list[_Leaf], raw: bytes) -> bool:
    """``{"name": "GITHUB_TOKEN", "value": …}``: a header-like pair with a secret name."""
    want = (*path[:-1], "name")
    for leaf in leaves:
        if leaf.path == want and not leaf.key:
            return leaf.string and secret_name(_key_text(raw[leaf.start : leaf.end]))
    return False


def _is_file_content(rel: Path, method: str, m: _Message) -> bool:
    keys = [p for p in rel if isinstance(p, str)]
    if method == "fs/read_text_file" and rel == ("result", "content"):
        return True
    if method == "fs/write_text_file" and rel == ("params", "content"):
        return True
    if keys and keys[-1] in ("oldText", "newText", "patch", "diff"):
        return True
    if "changes" in keys and keys[-1] in ("content", "text"):
        return True
    return "resource" in keys and keys[-1] in ("text", "blob")


def _is_text(rel: Path, method: str, m: _Message) -> bool:
    keys = [p for p in rel if isinstance(p, str)]
    if not keys or keys[-1] not in ("text", "content", "title", "thought"):
        return False
    if method == "session/prompt" and rel[:2] == ("params", "prompt") and keys[-1] == "text":
        return True
    update = m.update or ""
    if update in _CHUNK_TEXT_KINDS or "message" in update or "thought" in update:
        return keys[-1] == "text"
    if update == "plan" and "entries" in keys and keys[-1] == "content":
        return True
    if update in ("tool_call", "tool_call_update", "tool_call_content_chunk"):
        return keys[-1] == "text"
    return False

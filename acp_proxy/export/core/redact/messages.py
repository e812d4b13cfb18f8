"""What each message of a capture is, and which of its values go whole.

What belongs here: reading, per frame, its messages (method — a response's from its
request, paired by the one rule of :mod:`acp_proxy.protocol.pairing` —, update kind,
session, owner of a chunk) from the scanned leaves, and the rules by place that redact a
whole value: environment variables, headers, authentication, member names from a rules file
or that look secret, and the optional classes (file content, conversation text).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from acp_proxy.export.core.redact.rules import Rules, secret_name
from acp_proxy.export.core.redact.scan import Leaf, Path, key_text
from acp_proxy.protocol.frames import Frame
from acp_proxy.protocol.pairing import Pairing


@dataclass(slots=True)
class MessageFacts:
    """One message of a frame, as far as redaction needs to know it."""

    method: str | None = None
    kind: str | None = None
    update: str | None = None
    session: str | None = None
    owner: str | None = None  # toolCallId / terminalId of a chunk
    token: str | None = None  # the id's exact JSON text
    has_method: bool = False
    has_id: bool = False
    has_error: bool = False


_AUTH_KEEP = frozenset({"methodId", "type", "sessionId", "jsonrpc", "id", "method"})
_CHUNK_TEXT_KINDS = ("agent_message_chunk", "agent_thought_chunk", "user_message_chunk")


def contexts(
    frames: Sequence[Frame], scans: list[list[Leaf] | None]
) -> list[dict[Path, MessageFacts]]:
    """Per frame, its messages by root path (``()``, or ``(i,)`` in a batch), with the
    method (a response's from its request), update kind, session and owner."""
    pairing: Pairing[str] = Pairing()  # the request's method, "" when it has none
    out: list[dict[Path, MessageFacts]] = []
    for f, leaves in zip(frames, scans, strict=True):
        if leaves is None:  # not JSON: a null-id error from the other side answers it
            pairing.unreadable(f.direction, "")
        msgs: dict[Path, MessageFacts] = {}
        for leaf in leaves or ():
            if leaf.key:
                continue
            root, rel = split(leaf.path)
            m = msgs.setdefault(root, MessageFacts())
            value = f.raw[leaf.start : leaf.end]
            if rel == ("method",):
                m.has_method = True
                m.method = key_text(value) if leaf.string else None
            elif rel == ("id",):
                m.has_id = True
                token = f.raw[leaf.start - 1 : leaf.end + 1] if leaf.string else value
                m.token = token.decode("utf-8", "surrogateescape")
            elif rel[:1] == ("error",):
                m.has_error = True
            elif rel == ("params", "update", "sessionUpdate") and leaf.string:
                m.update = key_text(value)
            elif rel == ("params", "sessionId") and leaf.string:
                m.session = key_text(value)
            elif rel in (
                ("params", "update", "toolCallId"),
                ("params", "update", "terminalId"),
            ):
                m.owner = key_text(value)
        for m in msgs.values():
            if m.has_method and m.token is not None:
                m.kind = "request"
                pairing.request(f.direction, m.token, m.method or "")
            elif m.has_method:
                m.kind = "notification"
            elif m.token is not None:
                m.kind = "response"
                found, _how = pairing.response(f.direction, m.token, error=m.has_error)
                m.method = found or None
        out.append(msgs)
    return out


def whole_rule(
    path: Path,
    msgs: dict[Path, MessageFacts],
    leaves: list[Leaf],
    raw: bytes,
    rules: Rules,
    classes: frozenset[str],
) -> str | None:
    """The rule that redacts the whole string at ``path`` for where it is, or None when
    only the shapes and known secrets inside it are replaced."""
    root, rel = split(path)
    m = msgs.get(root) or MessageFacts()
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
    for name, regex in rules.keys:
        if any(regex.search(k) for k in keys):
            return name
    if any(secret_name(k) for k in keys if k != "_meta"):
        return "secret-name"
    if last == "value" and _sibling_secret_name(path, leaves, raw):
        return "secret-name"
    if "files" in classes and _is_file_content(rel, method, m):
        return "files"
    if "text" in classes and _is_text(rel, method, m):
        return "text"
    return None


def split(path: Path) -> tuple[Path, Path]:
    """A leaf's path as (the message's root in its frame, the path inside the message)."""
    if path and isinstance(path[0], int):
        return path[:1], path[1:]
    return (), path


def _sibling_secret_name(path: Path, leaves: list[Leaf], raw: bytes) -> bool:
    """``{"name": "GITHUB_TOKEN", "value": …}``: a header-like pair with a secret name."""
    want = (*path[:-1], "name")
    for leaf in leaves:
        if leaf.path == want and not leaf.key:
            return leaf.string and secret_name(key_text(raw[leaf.start : leaf.end]))
    return False


def _is_file_content(rel: Path, method: str, m: MessageFacts) -> bool:
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


def _is_text(rel: Path, method: str, m: MessageFacts) -> bool:
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

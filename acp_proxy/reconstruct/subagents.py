"""Subagent sessions and the messages between sessions (pure, no I/O).

What belongs here: the records of docs/protocol.md §13.1 and how updates change them —

* :class:`Subagent`: what a ``subagent_update`` on a parent session says of one child
  (the first one announces it; later ones patch ``title``, ``description``,
  ``capabilities``, ``state``, ``cwd``, ``additionalDirectories`` and ``_meta``: omitted
  keeps, ``null`` clears, ``_meta`` is patched by key). A child never changes parent.
* :class:`SessionMessage`: a message between sessions as one session's transcript shows it:
  ``session_message`` upserts its participants and references (patch rule) and, when it
  names ``content``, replaces the content; ``session_message_chunk`` appends one block.
  Chunks may come before the upsert that names the participants.

The fold (:mod:`acp_proxy.reconstruct.updates`) keeps them and links a tool call's
``{type: "session"}`` content to the session it names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["SessionMessage", "Subagent", "patch_meta"]

_SUBAGENT_FIELDS = ("title", "description", "capabilities", "state", "cwd", "additionalDirectories")
_MESSAGE_FIELDS = ("senderSessionId", "recipientSessionId", "senderMessageId", "recipientMessageId")


def patch_meta(old: Any, patch: Any) -> Any:
    """A ``_meta`` patch: ``null`` clears; an object sets its keys, a key set to ``null``
    is removed."""
    if patch is None:
        return None
    if not isinstance(patch, dict):
        return old
    meta = dict(old) if isinstance(old, dict) else {}
    for k, v in patch.items():
        if v is None:
            meta.pop(k, None)
        else:
            meta[k] = v
    return meta


@dataclass(slots=True)
class Subagent:
    """One child session as its parent described it."""

    session_id: str
    parent_id: str
    seq: int
    t_ns: int
    fields: dict[str, Any] = field(default_factory=dict)
    meta: Any = None
    updates: int = 0
    replayed: bool = False  # announced while the parent's history was replayed
    tool_call_ids: list[str] = field(default_factory=list)  # tool calls whose content links it

    def apply(self, u: dict[str, Any]) -> None:
        self.updates += 1
        for key in _SUBAGENT_FIELDS:
            if key in u:
                if u[key] is None:
                    self.fields.pop(key, None)
                else:
                    self.fields[key] = u[key]
        if "_meta" in u:
            self.meta = patch_meta(self.meta, u["_meta"])

    @property
    def cancellable(self) -> bool:
        caps = self.fields.get("capabilities")
        return isinstance(caps, dict) and isinstance(caps.get("cancel"), dict)


@dataclass(slots=True)
class SessionMessage:
    """A message between sessions, as the transcript of ``session_id`` shows it."""

    session_id: str
    message_id: str
    seq: int
    t_ns: int
    fields: dict[str, Any] = field(default_factory=dict)
    content: list[Any] = field(default_factory=list)
    meta: Any = None
    last_seq: int = 0
    replayed: bool = False

    def upsert(self, u: dict[str, Any], seq: int) -> None:
        self.last_seq = seq
        for key in _MESSAGE_FIELDS:
            if key in u:
                if u[key] is None:
                    self.fields.pop(key, None)
                else:
                    self.fields[key] = u[key]
        if "content" in u:
            c = u["content"]
            self.content = list(c) if isinstance(c, list) else []
        if "_meta" in u:
            self.meta = patch_meta(self.meta, u["_meta"])

    def chunk(self, u: dict[str, Any], seq: int) -> None:
        self.last_seq = seq
        if "content" in u:
            self.content = [*self.content, u["content"]]

    @property
    def sender(self) -> Any:
        return self.fields.get("senderSessionId")

    @property
    def recipient(self) -> Any:
        return self.fields.get("recipientSessionId")

    @property
    def text(self) -> str:
        return "".join(
            str(b.get("text", ""))
            for b in self.content
            if isinstance(b, dict) and b.get("type") == "text"
        )

"""Tool call state and how updates change it (pure, no I/O).

What belongs here: the :class:`ToolCall` record (one per ``toolCallId`` within an ACP
session) and the rules that apply a ``tool_call``, ``tool_call_update`` or
``tool_call_content_chunk`` to it, for v1 and v2 (docs/protocol.md §5, §6.1). Values are kept
as sent: custom ``_`` kinds and statuses and unknown content items are stored unchanged
(§7.2). Linking content to terminals and files is the fold's job (``fold.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "FINAL_STATUSES",
    "LocationSeen",
    "StatusChange",
    "ToolCall",
    "apply_content_chunk",
    "apply_v1",
    "apply_v2",
]

FINAL_STATUSES = frozenset({"completed", "failed", "cancelled"})
"""Statuses after which a tool call does not run again (§6.1). ``paused`` and custom
``_`` statuses are not final: clients treat unknown statuses as still in progress."""

_FIELDS = ("title", "name", "kind", "status", "content", "locations", "rawInput", "rawOutput")


@dataclass(slots=True)
class StatusChange:
    status: str
    seq: int
    t_ns: int


@dataclass(slots=True)
class LocationSeen:
    """A location the agent reported ("following the agent", §6.1), when first reported."""

    path: Any
    line: Any
    seq: int
    t_ns: int


@dataclass(slots=True)
class ToolCall:
    """What a client knows about one tool call after the updates folded so far."""

    session_id: str
    tool_call_id: str
    first_seq: int
    first_t_ns: int
    title: str | None = None
    name: str | None = None
    kind: str = "other"
    status: str = "pending"
    content: list[Any] = field(default_factory=list)
    locations: list[Any] = field(default_factory=list)
    raw_input: Any = None
    raw_output: Any = None
    capabilities: Any = None
    meta: dict[str, Any] | None = None
    last_seq: int = 0
    last_t_ns: int = 0
    updates: int = 0
    status_history: list[StatusChange] = field(default_factory=list)
    location_history: list[LocationSeen] = field(default_factory=list)
    terminal_ids: list[str] = field(default_factory=list)
    session_ids: list[str] = field(default_factory=list)  # sessions its content links (§13.1)
    cancel_requested_seq: int | None = None  # v2 tool_call/cancel (§4.3)
    replayed: bool = False  # first seen while session/load or resume replayed history
    anomalies: list[str] = field(default_factory=list)

    @property
    def ended_t_ns(self) -> int | None:
        """When the tool call first reached a final status, if it did."""
        for change in self.status_history:
            if change.status in FINAL_STATUSES:
                return change.t_ns
        return None

    def _touch(self, seq: int, t_ns: int) -> None:
        self.last_seq = seq
        self.last_t_ns = t_ns
        self.updates += 1

    def _set_status(self, status: str, seq: int, t_ns: int) -> None:
        if not self.status_history or self.status_history[-1].status != status:
            self.status_history.append(StatusChange(status, seq, t_ns))
        self.status = status

    def _set_locations(self, locations: list[Any], seq: int, t_ns: int) -> None:
        self.locations = locations
        seen = {(loc.path, loc.line) for loc in self.location_history}
        for loc in locations:
            if isinstance(loc, dict):
                key = (loc.get("path"), loc.get("line"))
                if key not in seen:
                    seen.add(key)
                    self.location_history.append(LocationSeen(key[0], key[1], seq, t_ns))


def _str_or(value: Any, default: str) -> str:
    return value if isinstance(value, str) else default


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def apply_v1(tc: ToolCall, u: dict[str, Any], seq: int, t_ns: int, *, create: bool) -> None:
    """Apply a v1 ``tool_call`` (``create``) or ``tool_call_update`` (§5.1, §6.1).

    ``tool_call`` reports the whole tool call: fields it omits take their defaults (kind
    ``other``, status ``pending``, no content). ``tool_call_update`` sends only changed
    fields; ``null`` leaves a field unchanged (the v1 schema's "optional" reading, which the
    SDKs deserialise as "not sent"), and ``content`` and ``locations`` replace whole arrays.
    """
    tc._touch(seq, t_ns)
    if create:
        tc.title = u.get("title") if isinstance(u.get("title"), str) else None
        tc.name = u.get("name") if isinstance(u.get("name"), str) else None
        tc.kind = _str_or(u.get("kind"), "other")
        tc.content = _list(u.get("content"))
        tc._set_locations(_list(u.get("locations")), seq, t_ns)
        tc.raw_input = u.get("rawInput")
        tc.raw_output = u.get("rawOutput")
        tc.meta = u["_meta"] if isinstance(u.get("_meta"), dict) else None
        tc._set_status(_str_or(u.get("status"), "pending"), seq, t_ns)
        return
    for key in _FIELDS:
        value = u.get(key)
        if value is None:
            continue
        _replace(tc, key, value, seq, t_ns)
    if isinstance(u.get("_meta"), dict):
        tc.meta = u["_meta"]


def apply_v2(tc: ToolCall, u: dict[str, Any], seq: int, t_ns: int) -> None:
    """Apply a v2 ``tool_call_update`` upsert (§6.1, schema ``ToolCallUpdate``).

    Omitted = unchanged; ``null`` = clear (title and name unset, kind back to ``other``,
    status back to ``pending``, content and locations emptied, capabilities none); a value
    replaces (``[]`` clears a collection). A ``_meta`` object patches the stored metadata by
    top-level key, a key set to ``null`` removing it; ``_meta: null`` clears it.
    """
    tc._touch(seq, t_ns)
    for key in (*_FIELDS, "capabilities"):
        if key not in u:
            continue
        value = u[key]
        if value is None:
            _clear(tc, key, seq, t_ns)
        else:
            _replace(tc, key, value, seq, t_ns)
    if "_meta" in u:
        patch = u["_meta"]
        if patch is None:
            tc.meta = None
        elif isinstance(patch, dict):
            meta = dict(tc.meta or {})
            for k, v in patch.items():
                if v is None:
                    meta.pop(k, None)
                else:
                    meta[k] = v
            tc.meta = meta


def apply_content_chunk(tc: ToolCall, u: dict[str, Any], seq: int, t_ns: int) -> Any:
    """Append one v2 ``tool_call_content_chunk`` item (§5.2); returns the item."""
    tc._touch(seq, t_ns)
    item = u.get("content")
    tc.content = [*tc.content, item]
    return item


def _replace(tc: ToolCall, key: str, value: Any, seq: int, t_ns: int) -> None:
    """Set one field; a malformed value is ignored, as the schema's
    ``x-deserialize-default-on-error`` drops it (docs/protocol.md §1)."""
    if key == "title":
        if isinstance(value, str):
            tc.title = value
    elif key == "name":
        if isinstance(value, str):
            tc.name = value
    elif key == "kind":
        tc.kind = _str_or(value, tc.kind)
    elif key == "status":
        if isinstance(value, str):
            tc._set_status(value, seq, t_ns)
    elif key == "content":
        if isinstance(value, list):
            tc.content = list(value)
    elif key == "locations":
        if isinstance(value, list):
            tc._set_locations(list(value), seq, t_ns)
    elif key == "rawInput":
        tc.raw_input = value
    elif key == "rawOutput":
        tc.raw_output = value
    elif key == "capabilities" and isinstance(value, dict):
        tc.capabilities = value


def _clear(tc: ToolCall, key: str, seq: int, t_ns: int) -> None:
    if key == "title":
        tc.title = None
    elif key == "name":
        tc.name = None
    elif key == "kind":
        tc.kind = "other"
    elif key == "status":
        tc._set_status("pending", seq, t_ns)
    elif key == "content":
        tc.content = []
    elif key == "locations":
        tc.locations = []
    elif key == "rawInput":
        tc.raw_input = None
    elif key == "rawOutput":
        tc.raw_output = None
    elif key == "capabilities":
        tc.capabilities = None

"""The one rule that pairs a JSON-RPC response with its request (pure, sans-I/O).

What belongs here: :class:`Pairing`, used by everything that pairs (the recorder, the
reconstruction, replay). The rule (docs/protocol.md §1 and §12.2):

- Both peers number their own requests, so a request is remembered under the **direction it
  travelled and its id token** (the id's exact JSON text: ``1`` and ``"1"`` differ). A
  response travelling the other way with the same token takes that entry; the same id may
  be in flight both ways at once.
- A request whose key is still pending replaces it and is reported as a duplicate (the
  earlier one stays unanswered).
- A response with no pending request is reported unpaired.
- An error with ``"id": null`` (a parse error or an invalid request, JSON-RPC 2.0 §5) has
  no id to pair by: it answers the latest frame the other side sent that could not be read
  as a message, if there is one.
- At most ``limit`` requests are remembered; the oldest is forgotten first (a peer that
  never answers must not grow memory without bound).

Entries of a batch are paired one by one, like any other message.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

from acp_proxy.protocol.frames import Direction

__all__ = ["DEFAULT_LIMIT", "NULL_ID", "Pairing"]

T = TypeVar("T")
NULL_ID = "null"
DEFAULT_LIMIT = 100_000


class Pairing(Generic[T]):
    """Pending requests keyed by (direction of the request, id token); ``T`` is whatever
    the caller keeps for a request (its seq and time, or a parsed message)."""

    __slots__ = ("_limit", "_pending", "_unreadable")

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self._pending: dict[tuple[Direction, str], T] = {}
        self._unreadable: dict[Direction, T] = {}
        self._limit = limit

    def request(self, direction: Direction, token: str, item: T) -> bool:
        """Remember a request; True when its key was already pending (a duplicate)."""
        key = (direction, token)
        duplicate = key in self._pending
        if duplicate:
            del self._pending[key]  # re-inserted last: the newest request of the two
        self._pending[key] = item
        if len(self._pending) > self._limit:
            del self._pending[next(iter(self._pending))]
        return duplicate

    def response(self, direction: Direction, token: str, *, error: bool) -> tuple[T | None, str]:
        """The request a response travelling ``direction`` answers, and how it paired:
        ``"paired"``, ``"null_id"`` (paired, or not, by the null-id rule) or ``"unpaired"``."""
        found = self._pending.pop((direction.opposite, token), None)
        if found is not None:
            return found, "paired"
        if error and token == NULL_ID:
            return self._unreadable.pop(direction.opposite, None), "null_id"
        return None, "unpaired"

    def unreadable(self, direction: Direction, item: T) -> None:
        """A frame that is not a readable message (invalid JSON, a batch): a null-id
        error from the other side answers the latest one."""
        self._unreadable[direction] = item

    def pending(self, direction: Direction, token: str) -> T | None:
        """The request ``direction`` sent under ``token``, if it is still unanswered."""
        return self._pending.get((direction, token))

    def outstanding(self) -> Iterator[tuple[Direction, str, T]]:
        """Every request still waiting for its answer, oldest first."""
        for (direction, token), item in self._pending.items():
            yield direction, token, item

    def __len__(self) -> int:
        return len(self._pending)

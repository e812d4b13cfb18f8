"""How many connections a listener relays at once, and the memory they may hold.

What belongs here: :class:`Capacity`, the admission rule the ``ws`` listener applies after
its token and origin checks. Each live connection costs an agent process or an upstream
connection, and memory for the messages it has in flight; both are bounded:

- at most ``max_connections`` at once;
- a connection **commits** ``2 × max_size`` bytes of the in-flight budget (one message of
  at most ``--max-size`` per direction: the relay reads the next message from a side only
  once it has handed the previous one to the other side, and stops reading while that side
  is not taking it), and one whose commitment would take the total over ``max_in_flight``
  is refused.

The budget is enforced when a connection is admitted, not by pausing reads: a connection
that is admitted can always run, so no connection ever waits for memory that others hold,
and nothing is slowed down. docs/websocket.md ("Limits") has the measured figures.
"""

from __future__ import annotations

import dataclasses

__all__ = ["DEFAULT_MAX_CONNECTIONS", "DEFAULT_MAX_IN_FLIGHT", "Capacity"]

DEFAULT_MAX_CONNECTIONS = 64
DEFAULT_MAX_IN_FLIGHT = 1 << 30  # 1 GiB


@dataclasses.dataclass(slots=True)
class Capacity:
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    per_connection: int = 0  # 2 × the largest message relayed
    live: int = 0

    @classmethod
    def for_messages(cls, max_connections: int, max_in_flight: int, max_size: int) -> Capacity:
        return cls(max_connections, max_in_flight, 2 * max_size)

    def admit(self) -> str | None:
        """Take a slot; or why not (the connection is then refused with HTTP 503)."""
        if self.live >= self.max_connections:
            return f"too many connections ({self.live} open, --max-connections)"
        committed = (self.live + 1) * self.per_connection
        if committed > self.max_in_flight:
            return (
                f"in-flight memory budget reached ({self.live} open, each may hold "
                f"{self.per_connection} bytes: 2 × --max-size; --max-in-flight "
                f"{self.max_in_flight})"
            )
        self.live += 1
        return None

    def release(self) -> None:
        self.live -= 1

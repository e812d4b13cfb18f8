"""How long a listener waits on a client, and the answer it writes when it stops waiting.

What belongs here: :class:`Timeouts`, the three bounds every listener applies to every
connection (``--head-timeout``, ``--body-timeout``, ``--idle-timeout``; the guarantees
are docs/reliability.md, "Listeners"), and :func:`plain_answer`, the bytes of an HTTP/1.1
answer a listener writes itself on a connection it then closes (a head that did not
parse, or did not come in time), before any request of it was relayed.

Without these bounds any local process could hold a listener's connection slots and file
descriptors for as long as it liked, by sending a request head, or a body, one byte at a
time, or nothing at all.
"""

from __future__ import annotations

import dataclasses
import http

__all__ = ["Timeouts", "plain_answer"]


@dataclasses.dataclass(frozen=True, slots=True)
class Timeouts:
    """Seconds a listener waits, per connection.

    - ``head``: for a request's head, from the connection's opening (its first request)
      or from the request's first byte (a later one); a WebSocket's upgrade request too;
    - ``body``: for a request's whole body, from the end of its head;
    - ``idle``: for the next request of a connection with none in progress (HTTP/1.1
      keep-alive; HTTP/2 with no stream open), and for a client to read anything of what
      it is sent while it reads nothing (a full socket buffer).
    """

    head: float = 10.0
    body: float = 60.0
    idle: float = 60.0


def plain_answer(status: int, message: str) -> bytes:
    """An HTTP/1.1 answer with a one-line text body, that closes the connection."""
    body = f"acp-proxy: {message}\n".encode()
    reason = http.HTTPStatus(status).phrase
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body

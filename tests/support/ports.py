"""Loopback ports for tests that run side by side with others."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["refusing_port"]


@contextmanager
def refusing_port() -> Iterator[int]:
    """A loopback port that refuses connections while the block runs: bound and never
    listened on, so no other test or process can take it meanwhile — as one could take a
    port picked and closed again."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]

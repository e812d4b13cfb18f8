"""The one error tree of acp-proxy.

::

    ProxyError                 base of everything we raise on purpose
    ├── UsageError             the user asked for something impossible (bad flag, no capture)
    ├── AgentSpawnError        the agent command cannot be started (exit_code 127 / 126)
    ├── StoreError             the recordings database cannot be opened or read
    │   └── SchemaError        the database has a schema we do not know (newer, damaged)
    ├── PeerError              the other side broke the protocol or the transport
    │   └── UpstreamError      a remote upstream cannot be reached or failed the handshake
    └── FrameTooLarge          a frame exceeded a configured limit (never raised on the
                               forwarding path: the framer splits instead)

Peer faults (``PeerError``) are kept apart from our own misuse (``UsageError``). The CLI
turns every ``ProxyError`` into one line on stderr and ``exit_code``.
"""

from __future__ import annotations

__all__ = [
    "AgentSpawnError",
    "FrameTooLarge",
    "PeerError",
    "ProxyError",
    "SchemaError",
    "StoreError",
    "UpstreamError",
    "UsageError",
]


class ProxyError(Exception):
    """Base class; ``exit_code`` is what the CLI exits with."""

    exit_code = 1


class UsageError(ProxyError):
    exit_code = 2


class AgentSpawnError(ProxyError):
    """The agent could not be started; ``exit_code`` follows the shell (127 missing, 126)."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class StoreError(ProxyError):
    exit_code = 3


class SchemaError(StoreError):
    pass


class PeerError(ProxyError):
    exit_code = 4


class UpstreamError(PeerError):
    pass


class FrameTooLarge(ProxyError):
    pass

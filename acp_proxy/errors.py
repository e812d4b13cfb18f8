"""The one error tree of acp-proxy: whose fault it is, and the exit status that says so.

::

    ProxyError                  base: a message for one line on stderr, and ``exit_code``
    ├── UsageError         2    the user's: an option, an argument, a file or a command
    │   │                       that cannot be used as given (a capture that does not
    │   │                       exist, a file that is not a jsonl export...)
    │   ├── FilterError         a filter expression that cannot be read (its column)
    │   └── AgentSpawnError     the agent command cannot be started: 127 when it is
    │                           missing, 126 when it cannot be executed, as a shell says
    ├── PeerError          4    the peer's: the other end of a connection broke the
    │   │                       protocol or went away (a remote agent that closed
    │   │                       abnormally)
    │   └── UpstreamError       a remote upstream could not be reached or refused us
    └── LocalError         1    ours: acp-proxy, or what it keeps on this machine, did not
        │                       do what it must (the bundled demo, spans not all sent)
        └── StoreError     3    the recordings database cannot be opened, read or written
            └── SchemaError     its schema is one we do not know (newer, damaged)

Each class is raised where the fault is found, with a message that names what went wrong;
the library never prints or exits. The command line turns every error into one line,
``acp-proxy: error: MESSAGE``, and its ``exit_code``, in one place
(:mod:`acp_proxy.cli.exits`). Peer content in a message is shown escaped there.
"""

from __future__ import annotations

__all__ = [
    "AgentSpawnError",
    "FilterError",
    "LocalError",
    "PeerError",
    "ProxyError",
    "SchemaError",
    "StoreError",
    "UpstreamError",
    "UsageError",
]


class ProxyError(Exception):
    """Base class; ``exit_code`` is the status the command line exits with."""

    exit_code = 1


class UsageError(ProxyError):
    """The user asked for something that cannot be done as asked."""

    exit_code = 2


class AgentSpawnError(UsageError):
    """The agent could not be started; ``exit_code`` follows the shell (127 missing, 126)."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class PeerError(ProxyError):
    """The other end of a connection broke the protocol or went away."""

    exit_code = 4


class UpstreamError(PeerError):
    """A remote upstream could not be reached, or refused the connection."""


class LocalError(ProxyError):
    """acp-proxy itself, or what it keeps on this machine, did not do what it must."""

    exit_code = 1


class StoreError(LocalError):
    """The recordings database cannot be opened, read or written."""

    exit_code = 3


class SchemaError(StoreError):
    """The database has a schema we do not know (newer than this release, or damaged)."""


class FilterError(UsageError):
    """A filter expression (``--filter``, the inspector's filter box) that cannot be read:
    the message names the column of the mistake."""

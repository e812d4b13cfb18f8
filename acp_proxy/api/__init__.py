"""The Python API: recordings as Python objects (docs/api.md).

::

    import acp_proxy

    with acp_proxy.open("~/.local/state/acp-proxy/recordings.sqlite") as rec:
        cap = rec.latest()
        print(cap.status, [t.stop_reason for t in cap.turns()])

The command line, the web inspector, the pytest plugin and the MCP server read recordings
through the same functions.
"""

from acp_proxy.api.recordings import Capture, Recordings, open
from acp_proxy.api.values import (
    Event,
    FileChange,
    Frame,
    Session,
    StderrLine,
    Terminal,
    ToolCall,
    Turn,
)

__all__ = [
    "Capture",
    "Event",
    "FileChange",
    "Frame",
    "Recordings",
    "Session",
    "StderrLine",
    "Terminal",
    "ToolCall",
    "Turn",
    "open",
]

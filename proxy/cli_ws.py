"""WebSocket commands: ``ws`` and ``record --upstream`` (issue: WebSocket).

Layer 4: thin click commands registered on :data:`proxy.cli.main`.
"""

from __future__ import annotations

from pathlib import Path

from .errors import UsageError

__all__ = ["record_upstream"]


def record_upstream(db: Path, url: str, *, label: str | None) -> int:
    """Bridge our stdio to a remote WebSocket agent, recording both legs."""
    raise UsageError("--upstream is not available yet")

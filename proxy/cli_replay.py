"""Replay commands: ``replay agent`` and ``replay client`` (issue: replay).

Layer 4: thin click commands registered on :data:`proxy.cli.main`.
"""

from __future__ import annotations

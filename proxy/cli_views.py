"""Reconstruction views: ``tools``, ``terminals``, ``diffs`` (issue: reconstruct).

Layer 4: thin click commands registered on :data:`proxy.cli.main`.
"""

from __future__ import annotations

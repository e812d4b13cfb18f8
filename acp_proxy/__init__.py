"""acp-proxy: a transparent recording proxy for the Agent Client Protocol."""

from typing import Any

__all__ = ["__version__", "open"]

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """``acp_proxy.open``: the Python API (docs/api.md), imported when first asked for, so
    the processes that only relay never load it."""
    if name == "open":
        from acp_proxy.api import open

        return open
    raise AttributeError(name)

"""acp-proxy: a transparent recording proxy for the Agent Client Protocol."""

__all__ = ["__version__"]

__version__ = "0.1.0"

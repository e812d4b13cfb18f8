"""The live telemetry options of ``record`` and ``ws``: ``--otlp-endpoint`` and
``--otel-content``, and the recorder environment they make.

Kept apart from :mod:`acp_proxy.cli.otel` (``otel push``), whose imports (the fold of a
capture into spans, the store) a relay does not need before its agent starts.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

from acp_proxy.cli.common import echo
from acp_proxy.errors import UsageError

__all__ = ["live_recorder_env", "otel_options"]

F = TypeVar("F", bound=Callable[..., Any])
_STANDARD = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


def otel_options(fn: F) -> F:
    """``--otlp-endpoint`` and ``--otel-content`` (record, ws)."""
    fn = click.option(
        "--otel-content",
        is_flag=True,
        help="With live spans: include prompts, answers, tool inputs and outputs and terminal "
        "output (left out by default).",
    )(fn)
    return click.option(
        "--otlp-endpoint",
        metavar="URL",
        help="Send OpenTelemetry spans of the sessions, as they run, to this OTLP/HTTP "
        "endpoint (http://host:4318; needs acp-proxy[otel]). Default: on when "
        "OTEL_EXPORTER_OTLP_ENDPOINT is set.",
    )(fn)


def _standard_env_asks() -> bool:
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return False
    return any(os.environ.get(name, "").strip() for name in _STANDARD)


def live_recorder_env(endpoint: str | None, content: bool) -> dict[str, str] | None:
    """The recorder environment that turns live spans on, or ``None``. An explicit
    ``--otlp-endpoint`` without the extra is an error (exit 2); the standard variables
    alone only warn, so an editor's session is never refused for them. Telemetry is
    imported only when it is asked for: a relay without it starts sooner."""
    if endpoint is not None or _standard_env_asks():
        from acp_proxy.otel.live import recorder_env
        from acp_proxy.otel.sdk import require, traces_endpoint

        if endpoint is not None:
            require()
            return recorder_env(traces_endpoint(endpoint), content)
        try:
            require()
        except UsageError as e:
            echo(f"acp-proxy: warning: OTEL_EXPORTER_OTLP_ENDPOINT is set but {e}", err=True)
            return None
        return recorder_env(None, content)
    if content:
        raise UsageError(
            "--otel-content goes with --otlp-endpoint (or OTEL_EXPORTER_OTLP_ENDPOINT)"
        )
    return None

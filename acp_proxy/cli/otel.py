"""``acp-proxy otel push``; the live telemetry options of ``record`` and ``ws`` are in
:mod:`acp_proxy.cli.otel_live`, so the relays start without this module's imports.

The mapping is in :mod:`acp_proxy.otel.core.mapping`, the sending in :mod:`acp_proxy.otel.sdk`;
this module only reads options and captures and reports. ``docs/otel.md`` has the rest.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import orjson

from acp_proxy import __version__
from acp_proxy.cli.common import CONTEXT, Progress, Seconds, echo, open_store
from acp_proxy.cli.options import db_option, group_db_option
from acp_proxy.errors import LocalError, UsageError
from acp_proxy.otel.core.fold import CaptureInfo
from acp_proxy.otel.source import Traced, trace_capture
from acp_proxy.store.reader import Store

__all__ = ["otel", "traced_captures"]


def _file_info(path: str) -> CaptureInfo:
    """What a ``jsonl`` export tells of its capture: the uid, and a start time placed so
    that the last frame is at the file's modification time."""
    uid, last = "", 0
    with open(path, "rb") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError as e:
                raise UsageError(f"{path}: not a jsonl export ({e})") from e
            if isinstance(obj, dict):
                uid = uid or str(obj.get("capture") or "")
                t = obj.get("t_ns")
                last = max(last, t) if isinstance(t, int) else last
    return CaptureInfo(uid or Path(path).name, os.stat(path).st_mtime_ns - last)


def traced_captures(
    db: Path | None, refs: list[str], *, all_: bool, content: bool
) -> Iterator[tuple[str, Traced]]:
    """``(label, (spans, resource))`` for each capture asked for."""
    from acp_proxy.cli.views import load_frames
    from acp_proxy.store.refs import is_file_ref

    if all_:
        store = open_store(db)
        for c in store.captures():
            yield str(c["id"]), _traced(store, c, content)
        return
    for ref in refs or [None]:  # type: ignore[list-item]
        if is_file_ref(ref):
            yield ref, trace_capture(_file_info(ref), load_frames(db, ref), content=content)
            continue
        store = open_store(db)
        c = store.capture(ref)
        yield str(c["id"]), _traced(store, c, content)


def _traced(store: Store, c: dict[str, Any], content: bool) -> Traced:
    """The trace of capture ``c``, with progress on a terminal while its frames are read."""
    with Progress(f"tracing capture {c['id']}", c.get("message_count")) as bar:
        frames = (sf.frame for sf in bar.wrap(store.frames(c["id"])))
        return trace_capture(c, frames, content=content)


@click.group(context_settings=CONTEXT)
@group_db_option
def otel() -> None:
    """OpenTelemetry: captures as traces (docs/otel.md).

    \b
    Example:
        acp-proxy otel push --endpoint http://localhost:4318      # the latest capture
        acp-proxy otel push --all --endpoint http://collector:4318
        acp-proxy export 3 --format otlp -o capture.otlp.json    # the same, as a file
    """


@otel.command(context_settings=CONTEXT)
@db_option
@click.argument("captures", nargs=-1)
@click.option("--all", "all_", is_flag=True, help="Every capture of the database.")
@click.option(
    "--endpoint",
    metavar="URL",
    help="OTLP/HTTP endpoint (http://host:4318 or a full .../v1/traces URL). Default: "
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_ENDPOINT, http://localhost:4318.",
)
@click.option(
    "--otel-content",
    "content",
    is_flag=True,
    help="Include prompts, answers, tool inputs and outputs and terminal output.",
)
@click.option(
    "--timeout",
    type=Seconds(),
    default=30.0,
    show_default=True,
    help="Seconds to wait for the endpoint to take everything.",
)
def push(
    db: Path | None,
    captures: tuple[str, ...],
    all_: bool,
    endpoint: str | None,
    content: bool,
    timeout: float,
) -> None:
    """Send captures (default: the latest; ids, uid prefixes or jsonl exports) to an
    OTLP/HTTP endpoint as traces. Span and trace ids are derived from the capture, so
    pushing a capture again sends the same spans.

    \b
    Example:
        acp-proxy otel push 3 recordings/demo-v1.jsonl --endpoint http://localhost:4318
    """
    from acp_proxy.otel.sdk import Sender, require, traces_endpoint

    require()
    if all_ and captures:
        raise UsageError("give captures or --all, not both")
    warnings: list[str] = []
    sender = Sender(traces_endpoint(endpoint), version=__version__, warn=warnings.append,
                    queue=1 << 30, timeout=timeout)  # fmt: skip
    n_spans = n_captures = 0
    for _label, (spans, res) in traced_captures(db, list(captures), all_=all_, content=content):
        sender.submit(spans, res)
        n_spans += len(spans)
        n_captures += 1
    dropped = sender.close(timeout)
    if dropped:
        raise LocalError(f"{sender.endpoint} did not take {dropped} of {n_spans} spans")
    echo(f"sent {n_spans} spans of {n_captures} captures to {sender.endpoint}", err=True)

"""``acp-proxy export``: a capture as jsonl, asciicast, patch or html."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from acp_proxy.cli.common import CONTEXT, db_option, echo, handle_errors, open_store
from acp_proxy.errors import UsageError
from acp_proxy.store.private import open_private

__all__ = ["export"]


@click.command(context_settings=CONTEXT)
@db_option
@click.argument("capture", required=False)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "asciicast", "patch", "html", "otlp"]),
    default="jsonl",
    show_default=True,
    help="jsonl: every frame, exact bytes; asciicast: one terminal (v2 asciicast, recorded "
    "timing); patch: the file changes as one patch for git apply; html: a page to open in "
    "a browser (turns, tool calls, terminals, diffs, every frame); otlp: the sessions as "
    "OpenTelemetry traces, OTLP/JSON (docs/otel.md).",
)
@click.option("--terminal", metavar="ID", help="The terminal to export as asciicast.")
@click.option(
    "--otel-content",
    is_flag=True,
    help="With --format otlp: include prompts, answers, tool inputs and outputs.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write to a file (created mode 0600) instead of stdout.",
)
@handle_errors
def export(
    db: Path | None,
    capture: str | None,
    fmt: str,
    terminal: str | None,
    otel_content: bool,
    output: Path | None,
) -> None:
    """Export a capture (default: the latest) with its exact bytes, a terminal, or a patch.

    \b
    Example:
        acp-proxy export 3 --format jsonl -o session.jsonl
        acp-proxy export 3 --format asciicast --terminal term_1 -o t.cast && asciinema play t.cast
        acp-proxy export 3 --format patch | git apply
        acp-proxy export 3 --format html -o capture.html
        acp-proxy export 3 --format otlp -o capture.otlp.json
    """
    from acp_proxy.export.jsonl import write_jsonl

    if otel_content and fmt != "otlp":
        raise UsageError("--otel-content goes with --format otlp")
    if fmt == "otlp":
        if terminal is not None:
            raise UsageError("--terminal goes with --format asciicast")
        _otlp(db, capture, otel_content, output)
        return
    if fmt == "html":
        from acp_proxy.check.source import check_stored
        from acp_proxy.export.html import render_html

        store = open_store(db)
        c = store.capture(capture)
        stored = list(store.frames(c["id"]))
        page = render_html(c, stored, check_stored(stored))
        if output is not None:
            with open_private(output) as out:
                out.write(page.encode("utf-8"))
            echo(f"wrote {output}", err=True)
        else:
            sys.stdout.write(page)
        return
    if fmt != "jsonl":
        from acp_proxy.cli.views import export_text

        text, notes = export_text(db, capture, fmt, terminal)
        for note in notes:
            echo(f"acp-proxy: {note}", err=True)
        if output is not None:
            with open_private(output) as out:
                out.write(text.encode("utf-8"))
            echo(f"wrote {fmt} to {output}", err=True)
        else:
            sys.stdout.write(text)
        return
    if terminal is not None:
        raise UsageError("--terminal goes with --format asciicast")
    store = open_store(db)
    c = store.capture(capture)
    frames = store.frames(c["id"])
    if output is not None:
        with open_private(output) as out:
            n = write_jsonl(frames, c["uid"], out)
        echo(f"wrote {n} frames to {output}", err=True)
    else:
        write_jsonl(frames, c["uid"], sys.stdout.buffer)


def _otlp(db: Path | None, capture: str | None, content: bool, output: Path | None) -> None:
    import orjson

    from acp_proxy import __version__
    from acp_proxy.cli.otel import traced_captures
    from acp_proxy.otel.otlpjson import encode

    refs = [capture] if capture is not None else []
    ((_, (spans, res)),) = traced_captures(db, refs, all_=False, content=content)
    from acp_proxy.text.safe import json_visible_bytes

    data = json_visible_bytes(orjson.dumps(encode(spans, res, version=__version__))) + b"\n"
    if output is not None:
        with open_private(output) as out:
            out.write(data)
        echo(f"wrote {len(spans)} spans to {output}", err=True)
    else:
        sys.stdout.buffer.write(data)

"""``acp-proxy export`` and ``acp-proxy share``: a capture as jsonl, asciicast, patch, html,
har or otlp, redacted on the way out when asked (``share`` always redacts)."""

from __future__ import annotations

import contextlib
import functools
import io
import os
import stat
import sys
from pathlib import Path
from typing import Any

import click

from acp_proxy.cli.common import (
    CONTEXT,
    CaptureCommand,
    Int,
    Progress,
    db_path,
    echo,
    expand_path,
    open_store,
)
from acp_proxy.cli.options import db_option
from acp_proxy.errors import UsageError
from acp_proxy.export.core.redact import CLASSES, Redactor, parse_rules
from acp_proxy.store.private import open_private
from acp_proxy.store.refs import is_file_ref, resolve

__all__ = ["export", "share"]

_FORMATS = ["jsonl", "asciicast", "patch", "html", "har", "otlp"]


def _classes(values: tuple[str, ...]) -> list[str] | None:
    """``--redact`` (credentials), ``--redact files,text`` (and those classes); None: off."""
    if not values:
        return None
    out: list[str] = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if part in ("", "secrets"):
                continue
            if part == "all":
                out.extend(CLASSES)
            elif part not in CLASSES:
                choices = ", ".join(("secrets", *CLASSES, "all"))
                raise UsageError(
                    f"no redaction class {part!r} (choose from {choices}; a capture goes "
                    "before --redact)"
                )
            else:
                out.append(part)
    return out


def _redactor(classes: list[str] | None, rules_file: Path | None) -> Redactor | None:
    if classes is None and rules_file is None:
        return None
    rules = None
    if rules_file is not None:
        try:
            text = rules_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise UsageError(f"cannot read {rules_file}: {e}") from e
        rules = parse_rules(text, str(rules_file))
    return Redactor(classes or (), rules)


def _write(data: bytes, output: Path | None, what: str) -> None:
    if output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    with open_private(output) as out:
        out.write(data)
    echo(f"wrote {what} to {output}", err=True)


def write_export(
    db: Path | None,
    capture: str | None,
    fmt: str,
    terminal: str | None,
    output: Path | None,
    redactor: Redactor | None,
    otel_content: bool = False,
    frames_only: bool = False,
) -> None:
    """Export one capture in ``fmt``, through ``redactor`` when given; ``frames_only``
    leaves the agent's stderr and the events out."""
    if terminal is not None and fmt != "asciicast":
        raise UsageError("--terminal goes with --format asciicast")
    if otel_content and fmt != "otlp":
        raise UsageError("--otel-content goes with --format otlp")
    if fmt == "otlp":
        _otlp(db, capture, otel_content, output, redactor)
        return
    if fmt in ("asciicast", "patch"):  # from the frames alone: a jsonl export works too
        from acp_proxy.cli.views import load_frames
        from acp_proxy.reading import export_text
        from acp_proxy.reconstruct import reconstruct

        frames = list(load_frames(db, capture))
        if redactor is not None:
            from acp_proxy.export.sharing import summary_lines

            done = redactor.redact(frames)
            frames = [r.frame for r in done]
            changed = sum(1 for r in done if r.sha256 is not None)
            for line in summary_lines(redactor, changed, len(frames)):
                echo(f"acp-proxy: {line}", err=True)
        text, warnings = export_text(reconstruct(frames), fmt, terminal)
        for note in warnings:
            echo(f"acp-proxy: {note}", err=True)
        _write(text.encode("utf-8"), output, fmt)
        return
    from acp_proxy.export.whole import export_whole

    source = resolve(capture, db_path(db))
    say = functools.partial(_say, "acp-proxy: ")
    c = source.capture
    with Progress(f"exporting capture {c.get('id', '')}", c.get("message_count")) as bar:
        written = export_whole(
            source, fmt, redactor, frames_only=frames_only, say=say, progress=bar.wrap
        )
    _write(written.data, output, written.what)


def _say(prefix: str, line: str) -> None:
    echo(prefix + line, err=True)


def _otlp(
    db: Path | None,
    capture: str | None,
    content: bool,
    output: Path | None,
    redactor: Redactor | None,
) -> None:
    import orjson

    from acp_proxy import __version__
    from acp_proxy.cli.otel import traced_captures
    from acp_proxy.otel.core.otlpjson import encode
    from acp_proxy.text.safe import json_visible_bytes

    if redactor is None:
        refs = [capture] if capture is not None else []
        ((_, (spans, res)),) = traced_captures(db, refs, all_=False, content=content)
    else:  # the same traces, made from the redacted frames and capture row
        from acp_proxy.cli.views import load_frames
        from acp_proxy.export.sharing import redact_capture, summary_lines
        from acp_proxy.otel.source import trace_capture
        from acp_proxy.store.refs import is_file_ref

        frames = list(load_frames(db, capture))
        done = redactor.redact(frames)
        if is_file_ref(capture):
            from acp_proxy.cli.otel import _file_info

            assert capture is not None
            info: Any = _file_info(capture)
        else:
            info = redact_capture(redactor, open_store(db).capture(capture))
        spans, res = trace_capture(info, [r.frame for r in done], content=content)
        changed = sum(1 for r in done if r.sha256 is not None)
        for line in summary_lines(redactor, changed, len(done)):
            echo(f"acp-proxy: {line}", err=True)
    data = json_visible_bytes(orjson.dumps(encode(spans, res, version=__version__))) + b"\n"
    _write(data, output, f"{len(spans)} spans")


_frames_only_option = click.option(
    "--frames-only",
    is_flag=True,
    help="Leave the agent's stderr and the capture events out (jsonl, html, har).",
)

_redact_rules_option = click.option(
    "--redact-rules",
    "rules_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="Your own redaction rules (TOML, format in docs/sharing.md); implies --redact.",
)


@click.command(cls=CaptureCommand, context_settings=CONTEXT)
@db_option
@click.argument("capture", required=False)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(_FORMATS),
    default="jsonl",
    show_default=True,
    help="jsonl: every frame, exact bytes; asciicast: one terminal (v2 asciicast, recorded "
    "timing); patch: the file changes as one patch for git apply; html: a page to open in "
    "a browser (turns, tool calls, terminals, diffs, every frame); har: HTTP Archive with "
    "the messages as browsers' developer tools write WebSocket traffic; otlp: the sessions "
    "as OpenTelemetry traces, OTLP/JSON (docs/otel.md).",
)
@click.option("--terminal", metavar="ID", help="The terminal to export as asciicast.")
@click.option(
    "--otel-content",
    is_flag=True,
    help="With --format otlp: include prompts, answers, tool inputs and outputs.",
)
@click.option(
    "--from",
    "from_seq",
    type=Int(),
    default=0,
    metavar="SEQ",
    help="html: lay out the frames from SEQ on (the next page of a big capture).",
)
@click.option(
    "--max-frames",
    type=Int(),
    default=5000,
    show_default=True,
    metavar="N",
    help="html: at most N frames laid out on the page (the page says how to see the rest).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write to a file (created mode 0600) instead of stdout.",
)
@click.option(
    "--redact",
    "redact",
    multiple=True,
    is_flag=False,
    flag_value="secrets",
    metavar="[CLASSES]",
    help="Replace secrets with stable placeholders (credentials always; add classes "
    "files, text, paths or all, comma-separated). A summary goes to stderr.",
)
@_redact_rules_option
@_frames_only_option
def export(
    db: Path | None,
    capture: str | None,
    fmt: str,
    terminal: str | None,
    otel_content: bool,
    from_seq: int,
    max_frames: int,
    output: Path | None,
    redact: tuple[str, ...],
    rules_file: Path | None,
    frames_only: bool,
) -> None:
    """Export a capture (default: the latest) with its exact bytes, a terminal, or a patch.

    \b
    Example:
        acp-proxy export 3 --format jsonl -o session.jsonl
        acp-proxy export 3 --format asciicast --terminal term_1 -o t.cast && asciinema play t.cast
        acp-proxy export 3 --format patch | git apply
        acp-proxy export 3 --format html -o capture.html
        acp-proxy export 3 --format otlp -o capture.otlp.json
        acp-proxy export 3 --redact files,paths -o shareable.jsonl
    """
    output = expand_path(output) if output is not None else None
    _private_stdout(output)
    if fmt != "html" and (from_seq != 0 or max_frames != 5000):
        raise UsageError("--from and --max-frames go with --format html")
    redactor = _redactor(_classes(redact), rules_file)
    if redactor is None and fmt == "html" and not is_file_ref(capture):  # streamed, paged
        if terminal is not None:
            raise UsageError("--terminal goes with --format asciicast")
        _html(db, capture, output, from_seq, max_frames)
        return
    if redactor is None and fmt in ("jsonl", "har"):  # streamed
        if terminal is not None:
            raise UsageError("--terminal goes with --format asciicast")
        _streamed(fmt, db, capture, output, frames_only)
        return
    # redaction sees the whole capture first (stable pseudonyms, secrets split across chunks)
    write_export(db, capture, fmt, terminal, output, redactor, otel_content, frames_only)


def _streamed(
    fmt: str, db: Path | None, capture: str | None, output: Path | None, frames_only: bool
) -> None:
    """A ``jsonl`` or ``har`` export written as the frames are read (never all held)."""
    from acp_proxy.export.har import write_har_export
    from acp_proxy.export.jsonl import write_export as write_jsonl_export

    write = write_jsonl_export if fmt == "jsonl" else write_har_export
    source = resolve(capture, db_path(db))
    c = source.capture
    with Progress(f"exporting capture {c.get('id', '')}", c.get("message_count")) as bar:
        if output is not None:
            with open_private(output) as out:
                n = write(source, out, frames_only=frames_only, progress=bar.wrap)
        else:
            write(source, sys.stdout.buffer, frames_only=frames_only, progress=bar.wrap)
            sys.stdout.buffer.flush()
    if output is not None:
        echo(f"wrote {n} frames to {output}" if fmt == "jsonl" else f"wrote har to {output}",
             err=True)  # fmt: skip


def _private_stdout(output: Path | None) -> None:
    """An export to stdout redirected to a file (``> x.jsonl``) is made 0600, as ``-o``
    makes it: recordings hold secrets, whatever the shell's umask."""
    if output is not None:
        return
    with contextlib.suppress(OSError):
        st = os.fstat(sys.stdout.fileno())
        if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid():
            os.fchmod(sys.stdout.fileno(), 0o600)


def _html(
    db: Path | None, capture: str | None, output: Path | None, from_seq: int, max_frames: int
) -> None:
    from acp_proxy.export.html import write_capture_html

    if from_seq < 0 or max_frames < 1:
        raise UsageError("--from takes a seq of zero or more, --max-frames at least 1")
    store = open_store(db)
    c = store.capture(capture)
    total = 2 * (c.get("message_count") or 0)
    with Progress(f"writing the page of capture {c['id']}", total) as bar:

        def write(out: Any) -> int:
            return write_capture_html(
                out, store, c, from_seq=from_seq, max_frames=max_frames, progress=bar.advance
            )

        if output is not None:
            with open_private(output) as raw, io.TextIOWrapper(raw, encoding="utf-8") as out:
                n = write(out)
            echo(f"wrote {output} ({n} frames laid out)", err=True)
        else:
            write(sys.stdout)


@click.command(context_settings=CONTEXT)
@db_option
@click.argument("capture", required=False)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="The file to write (created mode 0600).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["jsonl", "html", "har"]),
    default="jsonl",
    show_default=True,
    help="jsonl (imports with acp-proxy import), html or har.",
)
@click.option(
    "--redact",
    "redact",
    multiple=True,
    metavar="CLASSES",
    help="Also redact these classes: files, text, paths or all (comma-separated).",
)
@_redact_rules_option
@_frames_only_option
def share(
    db: Path | None,
    capture: str | None,
    output: Path,
    fmt: str,
    redact: tuple[str, ...],
    rules_file: Path | None,
    frames_only: bool,
) -> None:
    """Write a capture (default: the latest) with its secrets redacted, to attach to a bug
    report; what was redacted, by rule and count, goes to stderr. The agent's stderr and
    the capture events go with it (redacted the same way): the cause of a failure is often
    only there.

    \b
    Example:
        acp-proxy share -o bug.jsonl
        acp-proxy share 3 --redact files,paths -o bug.jsonl
        acp-proxy share 3 --format html -o bug.html
    """
    classes = _classes(("secrets", *redact)) or []
    redactor = _redactor(classes, rules_file)
    assert redactor is not None
    write_export(db, capture, fmt, None, output, redactor, frames_only=frames_only)

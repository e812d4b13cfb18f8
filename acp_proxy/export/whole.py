"""A whole capture held in memory and written in one format, redacted on the way out.

What belongs here: :func:`export_whole` — what ``share`` and ``export --redact`` do for the
formats that need the whole capture first (redaction names secrets across all of it: one
secret, one placeholder): the frames, the capture's row, and the agent's stderr and the
events (unless ``frames_only``) through the redactor when there is one, then written as
``jsonl``, ``html`` or ``har``. Streamed, unredacted exports are written by the format
modules themselves.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from acp_proxy.export.core.redact import Redactor
from acp_proxy.export.jsonl import capture_object, event_object, stderr_object, write_jsonl
from acp_proxy.export.sharing import redact_capture, redact_log, redact_stored, summary_lines
from acp_proxy.store.reader import StoredFrame
from acp_proxy.store.refs import Source
from acp_proxy.text.safe import json_visible_bytes

__all__ = ["Written", "export_whole"]


@dataclass(frozen=True, slots=True)
class Written:
    """What an export made: its bytes, and what it says of itself (``12 frames``)."""

    data: bytes
    what: str


def export_whole(
    source: Source,
    fmt: str,
    redactor: Redactor | None,
    *,
    frames_only: bool = False,
    say: Callable[[str], None] = lambda line: None,
    progress: Callable[[Iterator[StoredFrame]], Iterator[StoredFrame]] | None = None,
) -> Written:
    """``source`` as ``fmt`` (jsonl, html or har); ``say`` gets the redaction summary;
    ``progress`` wraps the frames as they are read."""
    c = source.capture
    frames = source.frames()
    stored = list(frames if progress is None else progress(frames))
    stderr = [] if frames_only else source.stderr()
    events = [] if frames_only else source.events()
    notes: dict[int, dict[str, object]] = {}
    if redactor is not None:
        shared = redact_stored(redactor, stored)
        stored, notes = shared.frames, shared.notes
        c = redact_capture(redactor, c)
        stderr, events, changed = redact_log(redactor, stderr, events)
        for line in summary_lines(redactor, len(notes), len(stored),
                                  (changed, len(stderr) + len(events))):  # fmt: skip
            say(line)
    if fmt == "jsonl":

        def jline(obj: dict[str, Any]) -> bytes:
            return json_visible_bytes(orjson.dumps(obj, default=str)) + b"\n"

        buf = io.BytesIO()
        buf.write(jline(capture_object(c)))  # the capture's metadata, as redacted
        n = write_jsonl(stored, c["uid"], buf, notes)
        for t_ns, data in stderr:  # the cause of a failure is often only here
            buf.write(jline({"record": "stderr", **stderr_object(t_ns, data)}))
        for ev in events:
            buf.write(jline({"record": "event", **event_object(ev)}))
        return Written(buf.getvalue(), f"{n} frames")
    if fmt == "html":
        from acp_proxy.export.html import render_html

        page = render_html(c, stored, stderr=stderr, events=events)
        return Written(page.encode("utf-8"), "html")
    from acp_proxy.export.har import render_har

    return Written(render_har(c, stored, events, redactor), "har")

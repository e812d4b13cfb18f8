"""``show --json``: one capture as one JSON document, written as it is read."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import orjson

from acp_proxy.reading.timeline import EventItem, Item, StderrItem
from acp_proxy.store.reader import StoredFrame

__all__ = ["show_json"]


def show_json(
    c: dict[str, Any],
    frames: Iterator[StoredFrame],
    stderr: Iterator[Item],
    events: Iterator[Item],
    match: Any,
    marks: dict[int, list[Any]] | None = None,
) -> None:
    """``show --json``: one JSON document, written as it is read from cursors (nothing of
    the capture is held in memory): the capture, its frames, and the timeline's stderr and
    event items."""
    from acp_proxy.events import describe
    from acp_proxy.export.jsonl import capture_object, frame_object, stderr_object
    from acp_proxy.store.refs import JSON_COLUMNS
    from acp_proxy.text.safe import json_visible_bytes
    from acp_proxy.text.timeline import event_detail

    out = sys.stdout.buffer

    def dumps(v: Any) -> bytes:
        return json_visible_bytes(orjson.dumps(v, default=str))

    def array(name: str, items: Iterator[bytes], last: bool = False) -> None:
        out.write(f' "{name}": ['.encode())
        sep = b"\n  "
        for item in items:
            out.write(sep + item)
            sep = b",\n  "
        out.write(b"\n ]\n}\n" if last else b"\n ],\n")

    capture = {**c, **{k: v for k, v in capture_object(c).items() if k in JSON_COLUMNS}}
    out.write(b'{"capture": ' + dumps(capture) + b",\n")

    def event(ev: dict[str, Any]) -> dict[str, Any]:
        detail = event_detail(ev)
        line = describe(str(ev.get("kind")), detail)
        return {"t_ns": ev["t_ns"], "kind": ev["kind"], "detail": detail or None, "line": line}

    def frame(f: StoredFrame) -> dict[str, Any]:
        obj = frame_object(f, c["uid"])
        if marks is not None:  # show --check: what acp-proxy check found in this frame
            obj["findings"] = [
                {"rule": x.rule, "severity": x.severity, "side": x.side, "message": x.message}
                for x in marks.get(f.seq, [])
            ]
        return obj

    array("frames", (dumps(frame(f)) for f in frames))
    array(
        "stderr",
        (
            dumps(stderr_object(s.t_ns, s.data))
            for s in stderr
            if isinstance(s, StderrItem)
            and (match is None or match.text(s.data.decode("utf-8", "replace")))
        ),
    )
    array(
        "events",
        (
            dumps(event(e.event))
            for e in events
            if isinstance(e, EventItem)
            and (match is None or match.text(f"{e.event['kind']} {e.event.get('detail') or ''}"))
        ),
        last=True,
    )
    out.flush()

"""Export formats (layer 4): ``jsonl`` — one JSON object per frame, exact bytes included.

What belongs here: serialising stored frames for other tools and for ``recordings/``, and
reading such files back (:func:`read_jsonl`), so a sample capture round-trips exactly.

The first line is the capture's metadata (``"record": "capture"``: uid, transport, agent
command, working directory, times, exit, label, peers, capabilities); then one line per
frame; then the agent's stderr (``"record": "stderr"``, ``t_ns``, ``text`` or ``base64``)
and the capture's events (``"record": "event"``, ``t_ns``, ``kind``, ``detail``). A frame
line has no ``record`` key, as in files written before exports carried the rest, which
are read as before. Each frame line: ``capture`` (uid), ``seq``, ``direction``
(``c2a``/``a2c``), ``t_ns``, either ``text`` (the exact bytes, when they are valid UTF-8)
or ``base64``, ``terminated``, ``opcode``, ``size`` and the derived fields (``kind``,
``method``, ``id``, ``session_id``, ``update_kind``, ``tool_call_id``, ``terminal_id``,
``error_code``, ``anomalies``, ``request_seq``, ``latency_ns``).
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Iterable, Iterator
from typing import IO, Any

import orjson

from acp_proxy.protocol.frames import Frame
from acp_proxy.store.reader import StoredFrame
from acp_proxy.store.refs import JSON_COLUMNS, Source, read_export
from acp_proxy.text.safe import json_visible_bytes

__all__ = ["capture_object", "frame_object", "read_jsonl", "write_export", "write_jsonl"]

# Columns that describe this database's bookkeeping, not the capture: left out of exports.
_LOCAL = frozenset(
    {
        "id", "pid", "proxy_pid", "proxy_start", "recorder_pid", "recorder_start", "rseq",
        "journal", "journal_number", "c2a_position", "a2c_position", "stderr_position",
        "started_ns",
    }
)  # fmt: skip


def frame_object(f: StoredFrame, capture_uid: str) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "capture": capture_uid,
        "seq": f.seq,
        "direction": f.direction.value,
        "t_ns": f.frame.t_ns,
    }
    try:
        obj["text"] = f.raw.decode("utf-8")
    except UnicodeDecodeError:
        obj["base64"] = base64.b64encode(f.raw).decode("ascii")
    obj.update(
        terminated=f.frame.terminated,
        opcode=f.opcode_text,
        size=f.size,
        kind=f.kind,
        method=f.method,
        id=f.msg_id,
        session_id=f.session_id,
        update_kind=f.update_kind,
        tool_call_id=f.tool_call_id,
        terminal_id=f.terminal_id,
        error_code=f.error_code,
        anomalies=list(f.anomalies),
        request_seq=f.request_seq,
        latency_ns=f.latency_ns,
    )
    return obj


def capture_object(c: dict[str, Any]) -> dict[str, Any]:
    """The metadata line of an export: the capture's columns, JSON columns parsed."""
    obj: dict[str, Any] = {"record": "capture"}
    for k, v in c.items():
        if k in _LOCAL or k == "source":
            continue
        if k in JSON_COLUMNS and isinstance(v, str):
            with contextlib.suppress(orjson.JSONDecodeError):
                v = orjson.loads(v)
        obj[k] = v
    return obj


def _data(data: bytes) -> dict[str, Any]:
    try:
        return {"text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def write_export(source: Source, out: IO[bytes]) -> int:
    """A whole capture as a ``jsonl`` export: metadata, frames, stderr, events. Returns the
    number of frames written."""

    def line(obj: dict[str, Any]) -> None:
        out.write(json_visible_bytes(orjson.dumps(obj, default=str)) + b"\n")

    c = source.capture
    line(capture_object(c))
    n = write_jsonl(source.frames(), c["uid"], out)
    for t_ns, data in source.stderr():
        line({"record": "stderr", "t_ns": t_ns, **_data(data)})
    for ev in source.events():
        line({"record": "event", "t_ns": ev["t_ns"], "kind": ev["kind"], "detail": ev["detail"]})
    return n


def write_jsonl(frames: Iterable[StoredFrame], capture_uid: str, out: IO[bytes]) -> int:
    """One line per frame; C1 controls in strings are written as ``\\u`` escapes (the same
    JSON value), so the file can be printed on a terminal too."""
    n = 0
    for f in frames:
        out.write(json_visible_bytes(orjson.dumps(frame_object(f, capture_uid))) + b"\n")
        n += 1
    return n


def read_jsonl(lines: Iterable[bytes], *, name: str = "jsonl") -> Iterator[Frame]:
    """Frames from a ``jsonl`` export (``acp-proxy export``), bytes exactly as recorded; a
    line that is not one of an export is a :class:`~acp_proxy.errors.UsageError` naming it."""
    for f in read_export(lines, name=name).frames:
        yield f.frame

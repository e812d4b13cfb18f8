"""Export formats: ``jsonl`` — one JSON object per frame, exact bytes included.

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
``error_code``, ``anomalies``, ``request_seq``, ``latency_ns``). A frame changed by
redaction (``export --redact``, docs/sharing.md) also has ``redacted``: ``{"sha256": <hex
of the original bytes>, "rules": [...]}``; readers ignore it.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import IO, Any, NamedTuple

import orjson

from acp_proxy.protocol.frames import Direction, Frame, Opcode
from acp_proxy.store.reader import StoredFrame
from acp_proxy.store.refs import JSON_COLUMNS, Source, read_export
from acp_proxy.text.safe import json_visible_bytes

__all__ = [
    "ExportLine",
    "capture_object",
    "event_object",
    "frame_object",
    "read_jsonl",
    "read_lines",
    "stderr_object",
    "write_export",
    "write_jsonl",
]

# Columns that describe this database's bookkeeping, not the capture: left out of exports.
_LOCAL = frozenset(
    {
        "id", "pid", "proxy_pid", "proxy_start", "recorder_pid", "recorder_start", "rseq",
        "journal", "journal_number", "c2a_position", "a2c_position", "stderr_position",
        "started_ns",
    }
)  # fmt: skip


def frame_object(
    f: StoredFrame, capture_uid: str, redacted: dict[str, Any] | None = None
) -> dict[str, Any]:
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
    if redacted is not None:
        obj["redacted"] = redacted
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


def stderr_object(t_ns: int, data: bytes) -> dict[str, Any]:
    """What the agent wrote on stderr at ``t_ns``: ``text`` when valid UTF-8, else
    ``base64`` (the exact bytes either way)."""
    return {"t_ns": t_ns, **_data(data)}


def event_object(ev: dict[str, Any]) -> dict[str, Any]:
    """A capture event as an export line holds it (``detail`` as stored: JSON text)."""
    return {"t_ns": ev["t_ns"], "kind": ev["kind"], "detail": ev["detail"]}


def _data(data: bytes) -> dict[str, Any]:
    try:
        return {"text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def write_export(
    source: Source,
    out: IO[bytes],
    *,
    frames_only: bool = False,
    progress: Callable[[Iterator[StoredFrame]], Iterator[StoredFrame]] | None = None,
) -> int:
    """A whole capture as a ``jsonl`` export: metadata, frames, stderr, events (not with
    ``frames_only``); ``progress`` wraps the frames as they are read. Returns the number
    of frames written."""

    def line(obj: dict[str, Any]) -> None:
        out.write(json_visible_bytes(orjson.dumps(obj, default=str)) + b"\n")

    c = source.capture
    line(capture_object(c))
    frames = source.frames()
    n = write_jsonl(frames if progress is None else progress(frames), c["uid"], out)
    if frames_only:
        return n
    for t_ns, data in source.stderr():
        line({"record": "stderr", **stderr_object(t_ns, data)})
    for ev in source.events():
        line({"record": "event", **event_object(ev)})
    return n


def write_jsonl(
    frames: Iterable[StoredFrame],
    capture_uid: str,
    out: IO[bytes],
    redacted: Mapping[int, dict[str, Any]] | None = None,
) -> int:
    """One line per frame; C1 controls in strings are written as ``\\u`` escapes (the same
    JSON value), so the file can be printed on a terminal too. ``redacted``: by ``seq``,
    what redaction changed in a frame."""
    n = 0
    notes = redacted or {}
    for f in frames:
        obj = frame_object(f, capture_uid, notes.get(f.seq))
        out.write(json_visible_bytes(orjson.dumps(obj)) + b"\n")
        n += 1
    return n


def read_jsonl(lines: Iterable[bytes], *, name: str = "jsonl") -> Iterator[Frame]:
    """Frames from a ``jsonl`` export (``acp-proxy export``), bytes exactly as recorded; a
    line that is not one of an export is a :class:`~acp_proxy.errors.UsageError` naming it."""
    for f in read_export(lines, name=name).frames:
        yield f.frame


class ExportLine(NamedTuple):
    """One line of a ``jsonl`` export: its number, the capture it names, the frame, and the
    anomalies it lists."""

    number: int
    capture: str
    frame: Frame
    anomalies: tuple[str, ...]


def read_lines(lines: Iterable[bytes]) -> Iterator[ExportLine]:
    """The lines of a ``jsonl`` export; ``ValueError("line N: …")`` on the first bad one."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            found = _line(number, line)
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as e:
            why = f"missing {e}" if isinstance(e, KeyError) else str(e)
            raise ValueError(f"line {number}: {why}") from e
        if found is not None:
            yield found


def _line(number: int, line: bytes) -> ExportLine | None:
    obj = orjson.loads(line)
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    if "record" in obj:
        return None  # the capture's metadata, stderr and events: not frames
    if "text" in obj:
        if not isinstance(obj["text"], str):
            raise ValueError("text is not a string")
        raw = obj["text"].encode("utf-8", "surrogatepass")
    else:
        raw = base64.b64decode(obj["base64"], validate=True)
    seq, t_ns = obj["seq"], obj["t_ns"]
    if seq.__class__ is not int or seq < 0 or t_ns.__class__ is not int:
        raise ValueError("seq and t_ns must be integers")
    anomalies = obj.get("anomalies") or []
    return ExportLine(
        number,
        str(obj.get("capture") or ""),
        Frame(
            seq=seq,
            direction=Direction(obj["direction"]),
            t_ns=t_ns,
            raw=raw,
            terminated=bool(obj.get("terminated", True)),
            opcode=Opcode(obj["opcode"]) if obj.get("opcode") else None,
        ),
        tuple(str(a) for a in anomalies) if isinstance(anomalies, list) else (),
    )

"""Export formats: ``jsonl`` — one JSON object per frame, exact bytes included.

What belongs here: serialising stored frames for other tools and for ``recordings/``, and
reading such files back (:func:`read_jsonl`), so a sample capture round-trips exactly.

Each line: ``capture`` (uid), ``seq``, ``direction`` (``c2a``/``a2c``), ``t_ns``, either
``text`` (the exact bytes, when they are valid UTF-8) or ``base64``, ``terminated``,
``opcode``, ``size`` and the derived fields (``kind``, ``method``, ``id``, ``session_id``,
``update_kind``, ``tool_call_id``, ``terminal_id``, ``error_code``, ``anomalies``,
``request_seq``, ``latency_ns``). A frame changed by redaction (``export --redact``,
docs/sharing.md) also has ``redacted``: ``{"sha256": <hex of the original bytes>,
"rules": [...]}``; :func:`read_jsonl` ignores it.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Iterator, Mapping
from typing import IO, Any, NamedTuple

import orjson

from acp_proxy.protocol.frames import Direction, Frame, Opcode
from acp_proxy.store.reader import StoredFrame
from acp_proxy.text.safe import json_visible_bytes

__all__ = [
    "ExportLine",
    "frame_object",
    "read_jsonl",
    "read_lines",
    "stderr_object",
    "write_jsonl",
]


def stderr_object(t_ns: int, data: bytes) -> dict[str, Any]:
    """What the agent wrote on stderr at ``t_ns``: ``text`` when valid UTF-8, else
    ``base64`` (the exact bytes either way)."""
    try:
        return {"t_ns": t_ns, "text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"t_ns": t_ns, "base64": base64.b64encode(data).decode("ascii")}


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


def read_jsonl(lines: Iterable[bytes]) -> Iterator[Frame]:
    """Frames from a ``jsonl`` export (``acp-proxy export``), bytes exactly as recorded.
    A line that is not one raises ``ValueError`` naming the line."""
    for line in read_lines(lines):
        yield line.frame


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
            yield _line(number, line)
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as e:
            why = f"missing {e}" if isinstance(e, KeyError) else str(e)
            raise ValueError(f"line {number}: {why}") from e


def _line(number: int, line: bytes) -> ExportLine:
    obj = orjson.loads(line)
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
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

"""Export formats: ``jsonl`` — one JSON object per frame, exact bytes included.

What belongs here: serialising stored frames for other tools and for ``recordings/``, and
reading such files back (:func:`read_jsonl`), so a sample capture round-trips exactly.

Each line: ``capture`` (uid), ``seq``, ``direction`` (``c2a``/``a2c``), ``t_ns``, either
``text`` (the exact bytes, when they are valid UTF-8) or ``base64``, ``terminated``,
``opcode``, ``size`` and the derived fields (``kind``, ``method``, ``id``, ``session_id``,
``update_kind``, ``tool_call_id``, ``terminal_id``, ``error_code``, ``anomalies``,
``request_seq``, ``latency_ns``).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Iterator
from typing import IO, Any

import orjson

from acp_proxy.protocol.frames import Direction, Frame, Opcode
from acp_proxy.store.reader import StoredFrame
from acp_proxy.text.safe import json_visible_bytes

__all__ = ["frame_object", "read_jsonl", "write_jsonl"]


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


def write_jsonl(frames: Iterable[StoredFrame], capture_uid: str, out: IO[bytes]) -> int:
    """One line per frame; C1 controls in strings are written as ``\\u`` escapes (the same
    JSON value), so the file can be printed on a terminal too."""
    n = 0
    for f in frames:
        out.write(json_visible_bytes(orjson.dumps(frame_object(f, capture_uid))) + b"\n")
        n += 1
    return n


def read_jsonl(lines: Iterable[bytes]) -> Iterator[Frame]:
    """Frames from a ``jsonl`` export (``acp-proxy export``), bytes exactly as recorded."""
    for line in lines:
        if not line.strip():
            continue
        obj = orjson.loads(line)
        raw = (
            obj["text"].encode("utf-8", "surrogatepass")
            if "text" in obj
            else base64.b64decode(obj["base64"])
        )
        yield Frame(
            seq=obj["seq"],
            direction=Direction(obj["direction"]),
            t_ns=obj["t_ns"],
            raw=raw,
            terminated=bool(obj.get("terminated", True)),
            opcode=Opcode(obj["opcode"]) if obj.get("opcode") else None,
        )

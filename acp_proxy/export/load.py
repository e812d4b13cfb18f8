"""``acp-proxy import``: jsonl exports back into the database as captures.

What belongs here: turning the lines of an export (ours, redacted or not) into the records
a recorder reads (:mod:`acp_proxy.record.core.wire`) and feeding them through the recorder's
own :class:`~acp_proxy.record.core.machine.Core` into :class:`~acp_proxy.record.sqlite.Database`,
so classification, pairing, latencies, batch items and the ``initialize`` fields are
computed exactly as for a live capture.

Each frame goes in as one ``MESSAGE`` record, so its bytes and its boundaries are exactly
the file's (a stdio line is never cut again). What the bytes cannot tell is carried over
from the file: the ``opcode`` (none for stdio), and the flags only the recording itself
could know (``unterminated``, ``truncated``, ``resumed``, ``undelivered``, ``split``).
A file whose capture uid is already in the database is not imported again.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from acp_proxy.errors import UsageError
from acp_proxy.export.jsonl import ExportLine, read_lines
from acp_proxy.protocol.frames import Direction, Opcode
from acp_proxy.record.core.machine import Core
from acp_proxy.record.core.rows import CaptureFields, FrameRow
from acp_proxy.record.core.wire import Flag, Record, Stream, Type
from acp_proxy.record.sqlite import Database
from acp_proxy.store.db import now_iso

__all__ = ["Imported", "import_file", "read_export"]

# Capture columns an export's metadata carries back: set when the capture opens, and when
# it closes.
_OPENED = ("transport", "agent_command", "cwd", "upstream_url", "listen_url", "started_at",
           "label")  # fmt: skip
_CLOSED = ("exit_code", "exit_signal", "ended_at", "ended_ns", "end_reason", "label")
# Flags a frame gets from how it was recorded, not from its bytes.
CARRIED = ("unterminated", "truncated", "resumed", "undelivered", "split")
_STREAM = {Direction.CLIENT_TO_AGENT: Stream.C2A, Direction.AGENT_TO_CLIENT: Stream.A2C}


@dataclass(slots=True)
class Imported:
    source: str
    uid: str
    capture_id: int
    frames: int
    already: bool = False  # the database had this capture: nothing was added


@dataclass(slots=True)
class Extras:
    """What an export carries beside its frames: the capture's metadata, the agent's
    stderr and the capture's events (empty for files written before exports had them)."""

    meta: dict[str, Any] = field(default_factory=dict)
    stderr: list[tuple[int, bytes]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)


def read_extras(path: Path) -> Extras:
    """The metadata, stderr and event lines of the export at ``path``."""
    from acp_proxy.store.refs import read_export as read_whole

    with open(path, "rb") as f:
        whole = read_whole(f, name=str(path))
    return Extras(dict(whole.capture), list(whole.stderr), list(whole.events))


def read_export(path: Path) -> dict[str, list[ExportLine]]:
    """The lines of an export by capture uid, in file order; one clear error naming the
    file and line for anything that is not one (or whose frames are out of order)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from e
    by_uid: dict[str, list[ExportLine]] = {}
    try:
        for line in read_lines(data.splitlines()):
            lines = by_uid.setdefault(line.capture, [])
            expected = lines[-1].frame.seq + 1 if lines else 0
            if line.frame.seq != expected:
                raise ValueError(
                    f"line {line.number}: frame seq {line.frame.seq} where {expected} was "
                    "expected (an export holds every frame of a capture, in order)"
                )
            lines.append(line)
    except ValueError as e:
        raise UsageError(f"{path}: not a jsonl export: {e}") from e
    if not by_uid:
        raise UsageError(f"{path}: no frames in it")
    return by_uid


def import_file(db_path: Path, path: Path) -> list[Imported]:
    """Import every capture of the export at ``path``."""
    captures = read_export(path)
    # an export holds one capture; its metadata, stderr and events go with it
    extras = read_extras(path) if len(captures) == 1 else Extras()
    db = Database(db_path, busy_timeout_ms=10_000)
    try:
        return [
            _import(db, path, uid or secrets.token_hex(16), lines, extras)
            for uid, lines in captures.items()
        ]
    finally:
        db.close()


def _import(
    db: Database, path: Path, uid: str, lines: list[ExportLine], extras: Extras
) -> Imported:
    known = db.capture_id(uid)
    if known is not None:
        return Imported(str(path), uid, known, 0, already=True)
    frames = [line.frame for line in lines]
    opcodes = {f.opcode for f in frames}
    had = extras.meta if extras.meta.get("uid") == uid else {}
    meta: dict[str, Any] = {
        "uid": uid,
        "transport": "ws" if opcodes - {None} else "stdio",
        "started_at": now_iso(),
        "label": f"imported from {os.path.basename(path)}",
    }
    meta.update({k: had[k] for k in _OPENED if had.get(k) is not None})
    meta["started_ns"] = 0
    core = Core()
    core.feed(Record(Type.OPEN, Stream.NONE, 0, 1, 0, 0, 0, orjson.dumps(meta)))
    position = {Stream.C2A: 0, Stream.A2C: 0}
    last_t = 0
    for f in frames:
        stream = _STREAM[f.direction]
        flags = Flag.TERMINATED if f.terminated else Flag.NONE
        if f.opcode is Opcode.BINARY:
            flags |= Flag.BINARY
        core.feed(Record(Type.MESSAGE, stream, flags, 1, 0, position[stream], f.t_ns, f.raw))
        position[stream] += 1
        last_t = max(last_t, f.t_ns)
    if had:
        err = 0
        for t_ns, data in extras.stderr:
            core.feed(Record(Type.STDERR, Stream.STDERR, 0, 1, 0, err, t_ns, data))
            err += len(data)
        for i, ev in enumerate(extras.events, 2):
            detail = ev.get("detail")
            if isinstance(detail, str):  # stored as JSON text, exported as it was stored
                try:
                    detail = orjson.loads(detail)
                except orjson.JSONDecodeError:
                    detail = None
            body = {"kind": ev.get("kind"), "detail": detail}
            t = ev.get("t_ns")
            t_ns = t if isinstance(t, int) else last_t
            core.feed(Record(Type.EVENT, Stream.NONE, 0, 1, i, 0, t_ns, orjson.dumps(body)))
    close = {"ended_at": now_iso(), "ended_ns": last_t, "end_reason": "closed"}
    close.update({k: had[k] for k in _CLOSED if k in had})
    seq_close = len(extras.events) + 2 if had else 1
    core.feed(Record(Type.CLOSE, Stream.NONE, 0, 1, seq_close, 0, last_t, orjson.dumps(close)))
    rows = core.take()
    if had.get("finished_at") is not None:  # as the original recorder wrote it
        rows.append(CaptureFields(uid, {"finished_at": had["finished_at"]}))
    by_seq = {line.frame.seq: line for line in lines}
    for row in rows:
        if isinstance(row, FrameRow):
            line = by_seq[row.seq]
            row.opcode = line.frame.opcode.value if line.frame.opcode else None
            row.anomalies = _carried(row.anomalies, line.anomalies)
    db.write(rows)
    cid = db.capture_id(uid)
    assert cid is not None
    return Imported(str(path), uid, cid, len(frames))


def _carried(derived: Iterable[str], recorded: tuple[str, ...]) -> list[str]:
    """The derived flags plus the carried ones; in the file's order when they are the
    same set (so an export of the import lists them as the original did)."""
    out = [a for a in derived if a not in CARRIED]
    out.extend(a for a in recorded if a in CARRIED and a not in out)
    return list(recorded) if set(out) == set(recorded) else out

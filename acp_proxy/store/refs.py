"""What a ``CAPTURE`` argument names: one rule for every command.

What belongs here: :func:`resolve`, which turns the text a user gave (a capture id, a uid
prefix, ``-1``/``latest``, or the path of a ``jsonl`` export) into a :class:`Source` with
the capture's metadata, frames, stderr and events, whether they come from the database or
from a file; and reading a ``jsonl`` export back (:func:`read_export`), line by line, with
an error naming the line when one is not what an export holds.

The rule: ``CAPTURE`` is a file when it ends in ``.jsonl``, contains a path separator, or
names an existing file while not looking like a database reference (digits, ``-N``,
``latest`` or a hex uid prefix). Anything else is looked up in the database.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from acp_proxy.errors import UsageError
from acp_proxy.protocol.frames import Direction, Frame, Opcode
from acp_proxy.protocol.jsonrpc import classify
from acp_proxy.store.reader import UNANSWERED, Store, StoredFrame

__all__ = [
    "JSON_COLUMNS",
    "Export",
    "ExportStore",
    "Source",
    "is_file_ref",
    "read_export",
    "resolve",
]

# Capture columns that hold JSON text in the database (parsed in an export's metadata).
JSON_COLUMNS = frozenset(
    {"agent_command", "client_info", "agent_info", "client_capabilities", "agent_capabilities"}
)
_DB_REF = re.compile(r"-?[0-9]+|latest|[0-9a-fA-F]+")


def is_file_ref(ref: str | None) -> bool:
    """Whether ``ref`` names a ``jsonl`` export rather than a capture of the database."""
    if ref is None:
        return False
    if ref.endswith(".jsonl") or os.sep in ref or (os.altsep and os.altsep in ref):
        return True
    return _DB_REF.fullmatch(ref) is None and Path(ref).is_file()


@dataclass(slots=True)
class Export:
    """What a ``jsonl`` export holds: metadata (empty for files written before exports
    carried it), frames, stderr chunks and events."""

    capture: dict[str, Any] = field(default_factory=dict)
    frames: list[StoredFrame] = field(default_factory=list)
    stderr: list[tuple[int, bytes]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)


class Source:
    """A capture to read, from the database or from a ``jsonl`` export.

    ``name`` is how to speak of it to the user: ``capture 3`` or the file's path."""

    def __init__(
        self,
        capture: dict[str, Any],
        name: str,
        *,
        store: Store | None = None,
        export: Export | None = None,
        path: Path | None = None,
    ) -> None:
        self.capture = capture
        self.name = name
        self.path = path
        self._store = store
        self._export = export

    @property
    def is_file(self) -> bool:
        return self._export is not None

    @property
    def store(self) -> Store | None:
        """The database the capture is in (``None`` for a ``jsonl`` export)."""
        return self._store

    def frames(self, upto_seq: int | None = None) -> Iterator[StoredFrame]:
        if self._store is not None:
            yield from self._store.frames(self.capture["id"], upto_seq=upto_seq)
            return
        assert self._export is not None
        for f in self._export.frames:
            if upto_seq is not None and f.seq > upto_seq:
                return
            yield f

    def plain_frames(self, upto_seq: int | None = None) -> Iterator[Frame]:
        """The frames alone (what a fold needs): from the database without the derived
        fields, which is most of the cost of reading a large capture."""
        if self._store is not None:
            yield from self._store.plain_frames(self.capture["id"], upto_seq=upto_seq)
            return
        for f in self.frames(upto_seq):
            yield f.frame

    def stderr(self) -> list[tuple[int, bytes]]:
        if self._store is not None:
            return list(self._store.stderr(self.capture["id"]))
        assert self._export is not None
        return list(self._export.stderr)

    def events(self) -> list[dict[str, Any]]:
        if self._store is not None:
            return self._store.events(self.capture["id"])
        assert self._export is not None
        return list(self._export.events)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


def resolve(ref: str | None, db: Path) -> Source:
    """The capture ``ref`` names (the latest of ``db`` when ``None``): see the module's rule.

    Raises :class:`UsageError` for a missing file, a file that is not a ``jsonl`` export
    (naming the line), or a reference that matches no capture."""
    if is_file_ref(ref):
        assert ref is not None
        path = Path(ref)
        if not path.is_file():
            raise UsageError(f"no recording file {path}")
        try:
            with open(path, "rb") as f:
                export = read_export(f, name=str(path))
        except OSError as e:
            raise UsageError(f"cannot read {path}: {e.strerror or e}") from e
        capture = {
            k: orjson.dumps(v).decode() if k in JSON_COLUMNS and v is not None else v
            for k, v in export.capture.items()
        }  # the JSON columns as the database holds them: text
        defaults = {"uid": path.stem, "transport": "?", "started_at": ""}
        for k, v in defaults.items():
            capture.setdefault(k, v)
        capture.setdefault("finished_at", "")  # an export is of a finished capture
        capture.setdefault("message_count", len(export.frames))
        capture["id"] = None
        capture["source"] = str(path)
        return Source(capture, str(path), export=export, path=path)
    store = Store(db)
    try:
        capture = store.capture(ref)
    except BaseException:
        store.close()
        raise
    return Source(capture, f"capture {capture['id']}", store=store)


class ExportStore:
    """A ``jsonl`` export read the way the timeline reads the database (:class:`Store`'s
    ``frames``, ``events``, ``stderr``, ``unanswered``), so ``show FILE`` and ``show`` of the
    capture it came from print the same lines. A request is unanswered when no frame's
    ``request_seq`` points back to it, as in the database."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self._answered: set[int] | None = None

    def answered(self) -> set[int]:
        if self._answered is None:
            self._answered = {
                f.request_seq for f in self.source.frames() if f.request_seq is not None
            }
        return self._answered

    def frames(
        self,
        capture_id: Any = None,
        *,
        after_seq: int = -1,
        upto_seq: int | None = None,
        limit: int | None = None,
        from_t_ns: int | None = None,
        ended: bool = False,
    ) -> Iterator[StoredFrame]:
        n = 0
        for f in self.source.frames(upto_seq):
            if f.seq <= after_seq or (from_t_ns is not None and f.frame.t_ns < from_t_ns):
                continue
            if ended and self._open(f) and UNANSWERED not in f.anomalies:
                f = dataclasses.replace(f, anomalies=(*f.anomalies, UNANSWERED))
            yield f
            n += 1
            if limit is not None and n >= limit:
                return

    def _open(self, f: StoredFrame) -> bool:
        return f.kind == "request" and f.seq not in self.answered()

    def unanswered(self, capture_id: Any = None) -> list[tuple[int, str | None]]:
        return [(f.seq, f.method) for f in self.source.frames() if self._open(f)]

    def events(self, capture_id: Any = None) -> list[dict[str, Any]]:
        return self.source.events()

    def stderr(self, capture_id: Any = None) -> list[tuple[int, bytes]]:
        return self.source.stderr()


def read_export(lines: Iterable[bytes], *, name: str = "jsonl") -> Export:
    """Everything in a ``jsonl`` export. Each line is a JSON object: a frame (no ``record``
    key), or ``record`` = ``capture`` (metadata), ``stderr`` or ``event``."""
    out = Export()
    uid: str | None = None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            raise UsageError(f"{name} line {n}: not JSON ({e})") from e
        if not isinstance(obj, dict):
            raise UsageError(f"{name} line {n}: not a JSON object ({type(obj).__name__})")
        try:
            record = obj.get("record", "frame")
            if record == "frame":
                out.frames.append(_frame(obj))
                if uid is None and isinstance(obj.get("capture"), str):
                    uid = obj["capture"]
            elif record == "capture":
                out.capture = {k: v for k, v in obj.items() if k != "record"}
            elif record == "stderr":
                out.stderr.append((_int(obj, "t_ns"), _bytes(obj)))
            elif record == "event":
                detail = obj.get("detail")
                if detail is not None and not isinstance(detail, str):
                    detail = orjson.dumps(detail).decode()
                out.events.append({"t_ns": _int(obj, "t_ns"), "kind": str(obj.get("kind")),
                                   "detail": detail})  # fmt: skip
            else:
                raise ValueError(f"unknown record {record!r}")
        except (KeyError, ValueError, TypeError) as e:
            why = f"no {e.args[0]!r}" if isinstance(e, KeyError) else str(e)
            raise UsageError(f"{name} line {n}: not a line of a jsonl export ({why})") from e
    if uid is not None:
        out.capture.setdefault("uid", uid)
    return out


def _int(obj: dict[str, Any], key: str) -> int:
    v = obj[key]
    if not isinstance(v, int) or isinstance(v, bool):
        raise ValueError(f"{key} is not an integer")
    return v


def _bytes(obj: dict[str, Any]) -> bytes:
    if "text" in obj:
        text = obj["text"]
        if not isinstance(text, str):
            raise ValueError("text is not a string")
        return text.encode("utf-8", "surrogatepass")
    data = obj["base64"]
    if not isinstance(data, str):
        raise ValueError("base64 is not a string")
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as e:
        raise ValueError(f"base64 is not valid ({e})") from e


def _frame(obj: dict[str, Any]) -> StoredFrame:
    raw = _bytes(obj)
    seq = _int(obj, "seq")
    frame = Frame(
        seq=seq,
        direction=Direction(obj["direction"]),
        t_ns=_int(obj, "t_ns"),
        raw=raw,
        terminated=bool(obj.get("terminated", True)),
        opcode=Opcode(obj["opcode"]) if obj.get("opcode") else None,
    )
    if isinstance(obj.get("kind"), str):
        anomalies = obj.get("anomalies") or []
        return StoredFrame(
            capture_id=0,
            frame=frame,
            size=obj["size"] if isinstance(obj.get("size"), int) else len(raw),
            kind=obj["kind"],
            method=_opt_str(obj.get("method")),
            msg_id=_opt_str(obj.get("id")),
            session_id=_opt_str(obj.get("session_id")),
            update_kind=_opt_str(obj.get("update_kind")),
            tool_call_id=_opt_str(obj.get("tool_call_id")),
            terminal_id=_opt_str(obj.get("terminal_id")),
            error_code=obj.get("error_code") if isinstance(obj.get("error_code"), int) else None,
            anomalies=tuple(str(a) for a in anomalies) if isinstance(anomalies, list) else (),
            request_seq=obj.get("request_seq") if isinstance(obj.get("request_seq"), int) else None,
            latency_ns=obj.get("latency_ns") if isinstance(obj.get("latency_ns"), int) else None,
            rowid=seq,
        )
    info = classify(raw)
    return StoredFrame(
        capture_id=0,
        frame=frame,
        size=len(raw),
        kind=str(info.kind),
        method=info.method,
        msg_id=info.id,
        session_id=info.session_id,
        update_kind=info.update_kind,
        tool_call_id=info.tool_call_id,
        terminal_id=info.terminal_id,
        error_code=info.error_code,
        anomalies=tuple(info.anomalies),
        request_seq=None,
        latency_ns=None,
        rowid=seq,
    )


def _opt_str(v: Any) -> str | None:
    return v if isinstance(v, str) else None

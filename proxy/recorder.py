"""The SQLite writer: one thread per process that owns the write connection (layer 2).

What belongs here: taking copies of traffic from the relay (chunks of a stream, whole
messages, stderr, lifecycle events), numbering and framing them, deriving their fields,
pairing responses with requests, and writing them in short batched transactions. Never on
the forwarding path: the relay's only cost is :meth:`Tap.chunk` (an append to a bounded
queue), and it blocks only when the writer is a full queue behind (backpressure, never drops).

When the database cannot be written (read-only, disk full, locked too long) the writer
switches to a spill file next to the database (``<db>.spill.<uid>.jsonl``, mode 0600) and
says so once on stderr. ``acp-proxy import-spill`` — or the next writer to open that
database — brings spilled records in. Records that can be neither written nor spilled are
counted and reported as a ``gap`` event when the database becomes reachable again.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import fcntl
import os
import sqlite3
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import orjson

from . import __version__
from .errors import StoreError
from .events import Direction, Opcode
from .framing import DEFAULT_MAX_FRAME, LineFramer
from .jsonrpc import Info, Kind, classify
from .store import connect, migrate

__all__ = ["CaptureMeta", "Tap", "Writer", "import_spill", "spill_files"]

DEFAULT_QUEUE_BYTES = 32 * 1024 * 1024
_MAX_ROWS_PER_TXN = 20_000
_MAX_PENDING_REQUESTS = 100_000


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(slots=True)
class CaptureMeta:
    """What is known of a capture when it starts."""

    transport: str = "stdio"
    agent_command: list[str] | None = None
    cwd: str | None = None
    upstream_url: str | None = None
    listen_url: str | None = None
    label: str | None = None
    pid: int | None = None
    uid: str = field(default_factory=lambda: uuid.uuid4().hex)
    started_at: str = field(default_factory=_now_iso)
    started_ns: int = field(default_factory=time.monotonic_ns)


class _ByteQueue:
    """A FIFO bounded by the bytes it holds; ``put`` blocks while it is full."""

    def __init__(self, capacity: int) -> None:
        self._items: collections.deque[tuple[Any, ...]] = collections.deque()
        self._bytes = 0
        self._cap = capacity
        self._lock = threading.Lock()
        self._not_empty = threading.Condition(self._lock)
        self._not_full = threading.Condition(self._lock)
        self.waits = 0  # how often a producer had to wait (backpressure applied)

    def put(self, item: tuple[Any, ...], size: int) -> None:
        with self._lock:
            if self._bytes and self._bytes + size > self._cap:
                self.waits += 1
                while self._bytes and self._bytes + size > self._cap:
                    self._not_full.wait()
            self._items.append(item)
            self._bytes += size
            self._not_empty.notify()

    def get_all(self, timeout: float | None) -> list[tuple[Any, ...]]:
        with self._lock:
            if not self._items:
                self._not_empty.wait(timeout)
            items = list(self._items)
            self._items.clear()
            self._bytes = 0
            self._not_full.notify_all()
            return items


class Tap:
    """The relay's handle on one capture. Thread-safe; every method returns at once
    unless the writer is a full queue behind."""

    def __init__(self, writer: Writer, meta: CaptureMeta) -> None:
        self.writer = writer
        self.meta = meta
        self._closed = False
        # owned by the writer thread:
        self.capture_id: int | None = None
        self.seq = 0
        self.framers: dict[Direction, LineFramer] = {}
        self.pending: dict[tuple[Direction, str], tuple[int, int, str | None]] = {}
        self.count = 0
        self.lost = 0
        self.updates: dict[str, Any] = {}

    def rel(self, t_ns: int) -> int:
        return t_ns - self.meta.started_ns

    def chunk(self, direction: Direction, data: bytes, t_ns: int | None = None) -> None:
        """Bytes read from a stream (stdio); framed into lines by the writer."""
        t = time.monotonic_ns() if t_ns is None else t_ns
        self.writer._q.put(("chunk", self, direction, t, data), len(data))

    def end_stream(self, direction: Direction) -> None:
        """The stream ended: a final line without ``\\n`` becomes an unterminated frame."""
        self.writer._q.put(("eos", self, direction, time.monotonic_ns()), 0)

    def message(
        self,
        direction: Direction,
        data: bytes,
        opcode: Opcode | None,
        t_ns: int | None = None,
        *,
        terminated: bool = False,
    ) -> None:
        """One whole message (WebSocket). ``terminated``: a stdio leg of a bridge carried it
        as a line ending in ``\\n``."""
        t = time.monotonic_ns() if t_ns is None else t_ns
        self.writer._q.put(("msg", self, direction, t, data, opcode, terminated), len(data))

    def stderr(self, data: bytes, t_ns: int | None = None) -> None:
        t = time.monotonic_ns() if t_ns is None else t_ns
        self.writer._q.put(("stderr", self, t, data), len(data))

    def event(self, kind: str, **detail: Any) -> None:
        self.writer._q.put(("event", self, time.monotonic_ns(), kind, detail), 64)

    def update(self, **fields: Any) -> None:
        """Set capture columns (pid, exit_code, ended_at, ...)."""
        self.writer._q.put(("update", self, fields), 64)

    def close(self, **fields: Any) -> None:
        """End the capture: pending stream tails are flushed, ``ended_at`` set."""
        if self._closed:
            return
        self._closed = True
        fields.setdefault("ended_at", _now_iso())
        fields.setdefault("ended_ns", time.monotonic_ns())
        self.writer._q.put(("close", self, fields), 64)


Warn = Callable[[str], None]


def _stderr_warn(message: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"acp-proxy: {message}\n")
        sys.stderr.flush()


class Writer:
    """Owns the write connection and its thread. ``open_capture`` gives a :class:`Tap`."""

    def __init__(
        self,
        db_path: Path,
        *,
        queue_bytes: int = DEFAULT_QUEUE_BYTES,
        max_frame: int = DEFAULT_MAX_FRAME,
        warn: Warn = _stderr_warn,
        import_spills: bool = True,
    ) -> None:
        self.db_path = Path(db_path)
        self._q = _ByteQueue(queue_bytes)
        self._max_frame = max_frame
        self._warn = warn
        self._conn: sqlite3.Connection | None = None
        self._spill: IO[bytes] | None = None
        self._spill_path: Path | None = None
        self._failed_reason: str | None = None
        self._taps: list[Tap] = []
        self.lost = 0
        self.frames_written = 0
        try:
            self._conn = connect(self.db_path)
            migrate(self._conn)
        except (StoreError, sqlite3.Error) as e:
            self._fail(str(e))
        if self._conn is not None and import_spills:
            self._import_leftover_spills()
        self._thread = threading.Thread(target=self._run, name="acp-proxy-writer", daemon=True)
        self._thread.start()

    # -- public -------------------------------------------------------------------------

    def open_capture(self, meta: CaptureMeta) -> Tap:
        tap = Tap(self, meta)
        self._q.put(("open", tap), 64)
        return tap

    @property
    def backpressure_waits(self) -> int:
        return self._q.waits

    def close(self, timeout: float | None = 30.0) -> None:
        """Flush everything queued and stop the thread."""
        self._q.put(("stop",), 0)
        self._thread.join(timeout)

    # -- writer thread ------------------------------------------------------------------

    def _run(self) -> None:
        stop = False
        while not stop:
            items = self._q.get_all(timeout=0.5)
            batch = _Batch()
            for item in items:
                if item[0] == "stop":
                    stop = True
                    continue
                self._process(item, batch)
                if batch.rows >= _MAX_ROWS_PER_TXN:
                    self._flush(batch)
                    batch = _Batch()
            self._flush(batch)
        if self._spill is not None:
            self._spill.close()
            self._spill = None
            self._reimport_own_spill()
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("PRAGMA optimize")
            self._conn.close()

    def _process(self, item: tuple[Any, ...], b: _Batch) -> None:
        op = item[0]
        tap: Tap = item[1]
        if op == "chunk":
            _, _, direction, t, data = item
            framer = tap.framers.get(direction)
            if framer is None:
                framer = tap.framers[direction] = LineFramer(self._max_frame)
            for piece in framer.feed(data):
                extra = ("split",) if piece.split else ()
                self._frame(b, tap, direction, t, piece.raw, piece.terminated, None, extra)
        elif op == "eos":
            _, _, direction, t = item
            framer = tap.framers.get(direction)
            if framer is not None:
                for piece in framer.end():
                    self._frame(b, tap, direction, t, piece.raw, False, None, ("unterminated",))
        elif op == "msg":
            _, _, direction, t, data, opcode, terminated = item
            self._frame(b, tap, direction, t, data, terminated, opcode, ())
        elif op == "stderr":
            b.stderr.append((tap, tap.rel(item[2]), item[3]))
        elif op == "event":
            b.events.append((tap, tap.rel(item[2]), item[3], item[4]))
        elif op == "update":
            tap.updates.update(item[2])
            b.touched[id(tap)] = tap
        elif op == "open":
            b.opens.append(tap)
            self._taps.append(tap)
        elif op == "close":
            for direction, framer in tap.framers.items():
                for piece in framer.end():
                    t = time.monotonic_ns()
                    self._frame(b, tap, direction, t, piece.raw, False, None, ("unterminated",))
            tap.updates.update(item[2])
            tap.updates["ended_ns"] = tap.rel(item[2]["ended_ns"])
            b.touched[id(tap)] = tap
            b.closes.append(tap)

    def _frame(
        self,
        b: _Batch,
        tap: Tap,
        direction: Direction,
        t_abs: int,
        raw: bytes,
        terminated: bool,
        opcode: Opcode | None,
        extra: tuple[str, ...],
    ) -> None:
        seq = tap.seq
        tap.seq += 1
        tap.count += 1
        t = t_abs - tap.meta.started_ns
        if opcode is Opcode.BINARY:
            info = Info(Kind.INVALID, anomalies=["binary"])
        else:
            info = classify(raw)
        anomalies = info.anomalies
        if extra:
            anomalies = [*anomalies, *extra]
        request_seq, latency = self._pair(tap, direction, seq, t, info, anomalies)
        if info.items is not None:
            for idx, it in enumerate(info.items):
                rs, lat = self._pair(tap, direction, seq, t, it, anomalies)
                b.items.append(
                    (
                        tap,
                        seq,
                        idx,
                        it.kind,
                        it.method,
                        it.id,
                        it.session_id,
                        it.update_kind,
                        it.tool_call_id,
                        it.terminal_id,
                        it.error_code,
                        rs,
                        lat,
                    )
                )
        if info.method == "initialize" or info.kind in (Kind.RESPONSE, Kind.ERROR):
            self._note_initialize(tap, direction, info, request_seq)
        b.frames.append(
            (
                tap,
                seq,
                direction.value,
                t,
                raw,
                1 if terminated else 0,
                opcode.value if opcode else None,
                len(raw),
                info.kind,
                info.method,
                info.id,
                info.session_id,
                info.update_kind,
                info.tool_call_id,
                info.terminal_id,
                info.error_code,
                ",".join(anomalies) if anomalies else None,
                request_seq,
                latency,
            )
        )
        b.touched[id(tap)] = tap

    def _pair(
        self, tap: Tap, direction: Direction, seq: int, t: int, info: Info, anomalies: list[str]
    ) -> tuple[int | None, int | None]:
        """Pair by (direction of the request, id token) — PROTOCOL.md §1, §12.2."""
        if info.id is None:
            return None, None
        if info.kind == Kind.REQUEST:
            key = (direction, info.id)
            if key in tap.pending and "duplicate_request_id" not in anomalies:
                anomalies.append("duplicate_request_id")
            tap.pending[key] = (seq, t, info.method)
            if len(tap.pending) > _MAX_PENDING_REQUESTS:
                tap.pending.pop(next(iter(tap.pending)))
            return None, None
        if info.kind in (Kind.RESPONSE, Kind.ERROR):
            found = tap.pending.pop((direction.opposite, info.id), None)
            if found is None:
                if "unpaired_response" not in anomalies:
                    anomalies.append("unpaired_response")
                return None, None
            info.method = info.method or found[2]
            return found[0], t - found[1]
        return None, None

    def _note_initialize(
        self, tap: Tap, direction: Direction, info: Info, request_seq: int | None
    ) -> None:
        """Capture the protocol version and peer info from ``initialize`` (§3)."""
        v = info.value
        if not isinstance(v, dict):
            return
        if info.kind == Kind.REQUEST and direction is Direction.CLIENT_TO_AGENT:
            p = v.get("params")
            if isinstance(p, dict):
                ci = p.get("clientInfo", p.get("info"))
                if ci is not None:
                    tap.updates["client_info"] = _json(ci)
                caps = p.get("clientCapabilities", p.get("capabilities"))
                if caps is not None:
                    tap.updates["client_capabilities"] = _json(caps)
                pv = p.get("protocolVersion")
                if isinstance(pv, int) and "protocol_version" not in tap.updates:
                    tap.updates["protocol_version"] = pv
        elif info.kind == Kind.RESPONSE and info.method == "initialize":
            r = v.get("result")
            if isinstance(r, dict):
                pv = r.get("protocolVersion")
                if isinstance(pv, int):
                    tap.updates["protocol_version"] = pv
                ai = r.get("agentInfo", r.get("info"))
                if ai is not None:
                    tap.updates["agent_info"] = _json(ai)
                caps = r.get("agentCapabilities", r.get("capabilities"))
                if caps is not None:
                    tap.updates["agent_capabilities"] = _json(caps)

    # -- writing ------------------------------------------------------------------------

    def _flush(self, b: _Batch) -> None:
        if b.empty():
            return
        if self._conn is not None and self._spill is None:
            try:
                self._write(self._conn, b)
                self.frames_written += len(b.frames)
                return
            except sqlite3.Error as e:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.execute("ROLLBACK")
                for tap in b.opens:
                    tap.capture_id = None
                self._fail(str(e))
        self._spill_batch(b)

    def _write(self, conn: sqlite3.Connection, b: _Batch) -> None:
        conn.execute("BEGIN IMMEDIATE")
        for tap in b.opens:
            m = tap.meta
            cur = conn.execute(
                "INSERT INTO captures (uid, transport, agent_command, cwd, upstream_url, "
                "listen_url, pid, proxy_pid, started_at, started_ns, proxy_version, label) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    m.uid,
                    m.transport,
                    _json(m.agent_command) if m.agent_command else None,
                    m.cwd,
                    m.upstream_url,
                    m.listen_url,
                    m.pid,
                    os.getpid(),
                    m.started_at,
                    m.started_ns,
                    __version__,
                    m.label,
                ),
            )
            tap.capture_id = cur.lastrowid
        if b.frames:
            conn.executemany(
                "INSERT INTO messages (capture_id, seq, direction, t_ns, raw, terminated, "
                "opcode, size, kind, method, msg_id, session_id, update_kind, tool_call_id, "
                "terminal_id, error_code, anomalies, request_seq, latency_ns) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [(r[0].capture_id, *r[1:]) for r in b.frames],
            )
        if b.items:
            conn.executemany(
                "INSERT INTO batch_items VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [(r[0].capture_id, *r[1:]) for r in b.items],
            )
        if b.stderr:
            conn.executemany(
                "INSERT INTO stderr (capture_id, t_ns, data) VALUES (?,?,?)",
                [(r[0].capture_id, r[1], r[2]) for r in b.stderr],
            )
        if b.events:
            conn.executemany(
                "INSERT INTO events (capture_id, t_ns, kind, detail) VALUES (?,?,?,?)",
                [(r[0].capture_id, r[1], r[2], _json(r[3]) if r[3] else None) for r in b.events],
            )
        for tap in b.touched.values():
            fields = dict(tap.updates)
            fields["message_count"] = tap.count
            cols = ", ".join(f"{k} = ?" for k in fields)
            conn.execute(
                f"UPDATE captures SET {cols} WHERE id = ?", [*fields.values(), tap.capture_id]
            )
        conn.execute("COMMIT")
        for tap in b.closes:
            with contextlib.suppress(ValueError):
                self._taps.remove(tap)

    # -- failure: spill -----------------------------------------------------------------

    def _fail(self, reason: str) -> None:
        if self._failed_reason is None:
            self._failed_reason = reason
        if self._spill is not None:
            return
        path = Path(f"{self.db_path}.spill.{uuid.uuid4().hex[:12]}.jsonl")
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_APPEND, 0o600)
            self._spill = os.fdopen(fd, "ab")
            fcntl.flock(self._spill.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            self._spill_path = path
            self._warn(
                f"warning: cannot write recordings database {self.db_path} ({reason}); "
                f"traffic is still forwarded; recording to {path} "
                f"(bring it in with: acp-proxy import-spill --db {self.db_path})"
            )
        except OSError as e:
            self._spill = None
            self._warn(
                f"warning: cannot write recordings database {self.db_path} ({reason}) nor a "
                f"spill file ({e.strerror}); traffic is still forwarded but NOT recorded"
            )

    def _spill_batch(self, b: _Batch) -> None:
        out = self._spill
        lines: list[bytes] = []
        for tap in b.opens:
            m = tap.meta
            lines.append(
                _json_line(
                    {
                        "t": "capture",
                        "uid": m.uid,
                        "transport": m.transport,
                        "agent_command": m.agent_command,
                        "cwd": m.cwd,
                        "upstream_url": m.upstream_url,
                        "listen_url": m.listen_url,
                        "pid": m.pid,
                        "proxy_pid": os.getpid(),
                        "started_at": m.started_at,
                        "started_ns": m.started_ns,
                        "label": m.label,
                    }
                )
            )
        for r in b.frames:
            lines.append(
                _json_line(
                    {
                        "t": "frame",
                        "uid": r[0].meta.uid,
                        "seq": r[1],
                        "dir": r[2],
                        "t_ns": r[3],
                        "raw": base64.b64encode(r[4]).decode(),
                        "terminated": r[5],
                        "opcode": r[6],
                    }
                )
            )
        for r in b.stderr:
            lines.append(
                _json_line(
                    {
                        "t": "stderr",
                        "uid": r[0].meta.uid,
                        "t_ns": r[1],
                        "data": base64.b64encode(r[2]).decode(),
                    }
                )
            )
        for r in b.events:
            lines.append(
                _json_line(
                    {"t": "event", "uid": r[0].meta.uid, "t_ns": r[1], "kind": r[2], "detail": r[3]}
                )
            )
        for tap in b.touched.values():
            lines.append(
                _json_line({"t": "update", "uid": tap.meta.uid, "fields": dict(tap.updates)})
            )
        if out is None:
            self.lost += len(b.frames)
            for tap in b.touched.values():
                tap.lost += sum(1 for r in b.frames if r[0] is tap)
            return
        try:
            out.write(b"".join(lines))
            out.flush()
        except OSError as e:
            self.lost += len(b.frames)
            self._warn(
                f"warning: spill file {self._spill_path} failed ({e.strerror}); "
                f"{len(b.frames)} frames lost"
            )

    def _reimport_own_spill(self) -> None:
        if self._spill_path is None:
            return
        try:
            conn = connect(self.db_path)
            migrate(conn)
        except (StoreError, sqlite3.Error):
            return
        try:
            import_spill(conn, self._spill_path)
        except sqlite3.Error:
            return
        finally:
            conn.close()
        self._warn(f"recordings from {self._spill_path} are now in {self.db_path}")

    def _import_leftover_spills(self) -> None:
        assert self._conn is not None
        for path in spill_files(self.db_path):
            with contextlib.suppress(sqlite3.Error, OSError):
                n = import_spill(self._conn, path)
                if n is not None:
                    self._warn(f"imported {n} spilled frames from {path}")


class _Batch:
    __slots__ = ("closes", "events", "frames", "items", "opens", "stderr", "touched")

    def __init__(self) -> None:
        self.opens: list[Tap] = []
        self.frames: list[tuple[Any, ...]] = []
        self.items: list[tuple[Any, ...]] = []
        self.stderr: list[tuple[Any, ...]] = []
        self.events: list[tuple[Any, ...]] = []
        self.touched: dict[int, Tap] = {}
        self.closes: list[Tap] = []

    @property
    def rows(self) -> int:
        return len(self.frames) + len(self.stderr) + len(self.events)

    def empty(self) -> bool:
        return not (self.opens or self.frames or self.stderr or self.events or self.touched)


def _json(v: Any) -> str:
    return orjson.dumps(v, option=orjson.OPT_NON_STR_KEYS, default=str).decode()


def _json_line(v: Any) -> bytes:
    return orjson.dumps(v, default=str) + b"\n"


def spill_files(db_path: Path) -> list[Path]:
    """Spill files that belong to ``db_path``."""
    p = Path(db_path)
    return sorted(p.parent.glob(p.name + ".spill.*.jsonl"))


def import_spill(conn: sqlite3.Connection, path: Path) -> int | None:
    """Bring a spill file's records into the database; returns frames imported.

    Returns ``None`` (and leaves the file) when another process still writes it. Derived
    fields are recomputed from the raw bytes; pairing is redone for the affected captures.
    The file is removed once its records are committed.
    """
    try:
        f = open(path, "rb")  # noqa: SIM115 - held for the lock
    except FileNotFoundError:
        return 0
    with f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return None
        records = [orjson.loads(line) for line in f if line.strip()]
        n = _import_records(conn, records)
        path.unlink()
    return n


def _import_records(conn: sqlite3.Connection, records: Iterable[dict[str, Any]]) -> int:
    ids: dict[str, int] = {}

    def capture_id(uid: str) -> int:
        if uid not in ids:
            row = conn.execute("SELECT id FROM captures WHERE uid = ?", [uid]).fetchone()
            if row is None:
                cur = conn.execute(
                    "INSERT INTO captures (uid, transport, started_at, started_ns, "
                    "proxy_version) VALUES (?, 'unknown', ?, 0, ?)",
                    [uid, _now_iso(), __version__],
                )
                ids[uid] = int(cur.lastrowid or 0)
            else:
                ids[uid] = int(row[0])
        return ids[uid]

    frames = 0
    conn.execute("BEGIN IMMEDIATE")
    try:
        for r in records:
            t = r["t"]
            if t == "capture":
                cid = capture_id(r["uid"])
                conn.execute(
                    "UPDATE captures SET transport=?, agent_command=?, cwd=?, upstream_url=?, "
                    "listen_url=?, pid=?, proxy_pid=?, started_at=?, started_ns=?, label=? "
                    "WHERE id=?",
                    [
                        r["transport"],
                        _json(r["agent_command"]) if r["agent_command"] else None,
                        r["cwd"],
                        r["upstream_url"],
                        r["listen_url"],
                        r["pid"],
                        r["proxy_pid"],
                        r["started_at"],
                        r["started_ns"],
                        r["label"],
                        cid,
                    ],
                )
            elif t == "frame":
                cid = capture_id(r["uid"])
                raw = base64.b64decode(r["raw"])
                opcode = r.get("opcode")
                info = (
                    Info(Kind.INVALID, anomalies=["binary"])
                    if opcode == "binary"
                    else classify(raw)
                )
                anomalies = [*info.anomalies, "spilled"]
                conn.execute(
                    "INSERT OR IGNORE INTO messages (capture_id, seq, direction, t_ns, raw, "
                    "terminated, opcode, size, kind, method, msg_id, session_id, update_kind, "
                    "tool_call_id, terminal_id, error_code, anomalies) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    [
                        cid,
                        r["seq"],
                        r["dir"],
                        r["t_ns"],
                        raw,
                        r["terminated"],
                        opcode,
                        len(raw),
                        info.kind,
                        info.method,
                        info.id,
                        info.session_id,
                        info.update_kind,
                        info.tool_call_id,
                        info.terminal_id,
                        info.error_code,
                        ",".join(anomalies),
                    ],
                )
                frames += 1
            elif t == "stderr":
                conn.execute(
                    "INSERT INTO stderr (capture_id, t_ns, data) VALUES (?,?,?)",
                    [capture_id(r["uid"]), r["t_ns"], base64.b64decode(r["data"])],
                )
            elif t == "event":
                conn.execute(
                    "INSERT INTO events (capture_id, t_ns, kind, detail) VALUES (?,?,?,?)",
                    [
                        capture_id(r["uid"]),
                        r["t_ns"],
                        r["kind"],
                        _json(r["detail"]) if r["detail"] else None,
                    ],
                )
            elif t == "update":
                fields = {k: v for k, v in r["fields"].items() if k.isidentifier()}
                if fields:
                    cols = ", ".join(f"{k} = ?" for k in fields)
                    conn.execute(
                        f"UPDATE captures SET {cols} WHERE id = ?",
                        [*fields.values(), capture_id(r["uid"])],
                    )
        for cid in ids.values():
            repair_pairs(conn, cid)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return frames


def repair_pairs(conn: sqlite3.Connection, capture_id: int) -> None:
    """Recompute request/response pairing and the message count of one capture."""
    pending: dict[tuple[str, str], tuple[int, int, str | None]] = {}
    updates: list[tuple[Any, ...]] = []
    rows = conn.execute(
        "SELECT seq, direction, t_ns, kind, msg_id, method FROM messages "
        "WHERE capture_id = ? AND msg_id IS NOT NULL ORDER BY seq",
        [capture_id],
    ).fetchall()
    for seq, direction, t, kind, msg_id, method in rows:
        if kind == Kind.REQUEST:
            pending[(direction, msg_id)] = (seq, t, method)
        elif kind in (Kind.RESPONSE, Kind.ERROR):
            other = Direction(direction).opposite.value
            found = pending.pop((other, msg_id), None)
            if found is not None:
                updates.append((found[0], t - found[1], found[2], capture_id, seq))
    conn.executemany(
        "UPDATE messages SET request_seq = ?, latency_ns = ?, method = COALESCE(method, ?) "
        "WHERE capture_id = ? AND seq = ?",
        updates,
    )
    conn.execute(
        "UPDATE captures SET message_count = "
        "(SELECT COUNT(*) FROM messages WHERE capture_id = ?) WHERE id = ?",
        [capture_id, capture_id],
    )

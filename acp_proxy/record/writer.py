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

import collections
import contextlib
import gc
import os
import pickle
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp_proxy.protocol.frames import Direction, Opcode
from acp_proxy.protocol.framing import DEFAULT_MAX_FRAME, LineFramer
from acp_proxy.protocol.jsonrpc import Info, Kind, classify
from acp_proxy.record.sink import (
    Batch,
    SqliteSink,
    frame_row,
    import_spill,
    now_iso,
    spill_files,
    stderr_warn,
)
from acp_proxy.record.sink import json_text as _json

__all__ = [
    "CaptureMeta",
    "Tap",
    "Writer",
    "import_spill",
    "spill_files",
    "tune_relay_process",
]

DEFAULT_QUEUE_BYTES = 8 * 1024 * 1024
_MAX_ROWS_PER_TXN = 10_000
_COALESCE_S = 0.002
_MAX_BYTES_PER_TXN = 1024 * 1024  # a batch is held as rows, pickled, and unpickled
_MAX_PENDING_REQUESTS = 100_000


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
    started_at: str = field(default_factory=now_iso)
    started_ns: int = field(default_factory=time.monotonic_ns)


def tune_relay_process() -> None:
    """Process-wide settings for a process that relays and records (the CLI's commands).

    The recorder thread is CPU-bound during floods; a short GIL switch interval lets a
    thread or event loop with bytes to forward take the GIL within half a millisecond
    instead of five. The recorder makes many short-lived tuples and no cycles, so the
    young generation is collected far less often.
    """
    sys.setswitchinterval(0.0005)
    gc.freeze()
    gc.set_threshold(50_000, 50, 50)


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
        self.last_unparsable: dict[Direction, tuple[int, int]] = {}
        self.count = 0
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
        fields.setdefault("ended_at", now_iso())
        fields.setdefault("ended_ns", time.monotonic_ns())
        self.writer._q.put(("close", self, fields), 64)


Warn = Callable[[str], None]
_DIRECTION_VALUE = {d: d.value for d in Direction}  # Enum.value is a descriptor call


class Writer:
    """Frames, classifies and pairs what taps hand it, in one thread; SQLite runs in a child
    process (``python -m acp_proxy.record.child``) fed through a pipe, or in that thread when
    ``in_process`` is set or the child cannot run. ``open_capture`` gives a :class:`Tap`."""

    def __init__(
        self,
        db_path: Path,
        *,
        queue_bytes: int = DEFAULT_QUEUE_BYTES,
        max_frame: int = DEFAULT_MAX_FRAME,
        warn: Warn = stderr_warn,
        in_process: bool = False,
    ) -> None:
        self.db_path = Path(db_path)
        self._q = _ByteQueue(queue_bytes)
        self._max_frame = max_frame
        self._warn = warn
        self._sink: SqliteSink | None = None
        self._live: dict[str, Tap] = {}  # captures opened and not yet closed
        if os.environ.get("ACP_PROXY_RECORDER") == "thread":
            in_process = True
        self._child = None if in_process else _spawn_child(self.db_path)
        self._child_fd = -1
        if self._child is not None:
            assert self._child.stdin is not None
            self._child_fd = self._child.stdin.fileno()
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

    def close(self, timeout: float | None = 60.0) -> None:
        """Flush everything queued, then wait until it is in the database."""
        self._q.put(("stop",), 0)
        self._thread.join(timeout)
        child = self._child
        if child is not None:
            assert child.stdin is not None
            with contextlib.suppress(OSError):
                child.stdin.close()
            try:
                child.wait(timeout)
            except subprocess.TimeoutExpired:
                self._warn("warning: the recorder process is still writing; leaving it to finish")
        if self._sink is not None:
            self._sink.close()

    # -- writer thread ------------------------------------------------------------------

    def _run(self) -> None:
        stop = False
        while not stop:
            items = self._q.get_all(timeout=0.5)
            if 0 < len(items) < 64 and all(item[0] != "stop" for item in items):
                # Sparse traffic: wait a moment before taking the GIL, so that the answer
                # to what just went by is forwarded first, and batch what follows with it.
                time.sleep(_COALESCE_S)
                items += self._q.get_all(timeout=0)
            batch = _Batch()
            for item in items:
                if item[0] == "stop":
                    stop = True
                    continue
                self._process(item, batch)
                if batch.rows >= _MAX_ROWS_PER_TXN or batch.nbytes >= _MAX_BYTES_PER_TXN:
                    self._flush(batch)
                    batch = _Batch()
            self._flush(batch)

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
            b.stderr.append((tap.meta.uid, tap.rel(item[2]), item[3]))
        elif op == "event":
            b.events.append((tap.meta.uid, tap.rel(item[2]), item[3], item[4]))
        elif op == "update":
            tap.updates.update(item[2])
            b.touched[id(tap)] = tap
        elif op == "open":
            b.opens.append(tap)
            self._live[tap.meta.uid] = tap
        elif op == "close":
            for direction, framer in tap.framers.items():
                for piece in framer.end():
                    t = time.monotonic_ns()
                    self._frame(b, tap, direction, t, piece.raw, False, None, ("unterminated",))
            tap.updates.update(item[2])
            tap.updates["ended_ns"] = tap.rel(item[2]["ended_ns"])
            b.touched[id(tap)] = tap
            self._live.pop(tap.meta.uid, None)

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
        uid = tap.meta.uid
        b.nbytes += len(raw)
        b.frame_count += 1
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
        if info.id is None and info.kind == Kind.NOTIFICATION:
            request_seq = latency = None  # the common case: nothing to pair
        else:
            request_seq, latency = self._pair(tap, direction, seq, t, info, anomalies)
        if info.items is not None:
            for idx, it in enumerate(info.items):
                rs, lat = self._pair(tap, direction, seq, t, it, anomalies)
                b.items.append(
                    (
                        uid,
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
        rows = b.frames.get(uid)
        if rows is None:
            rows = b.frames[uid] = []
        rows.append(
            frame_row(
                seq,
                _DIRECTION_VALUE[direction],
                t,
                raw,
                terminated,
                opcode.value if opcode else None,
                info,
                anomalies,
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
            if info.kind in (Kind.INVALID, Kind.BATCH):
                tap.last_unparsable[direction] = (seq, t)
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
            if found is None and info.id == "null" and info.kind == Kind.ERROR:
                # A parse or invalid-request error has no id to pair by (JSON-RPC §5): it
                # answers the latest frame the other side could not read, if there is one.
                anomalies.append("null_id")
                culprit = tap.last_unparsable.pop(direction.opposite, None)
                return (culprit[0], t - culprit[1]) if culprit else (None, None)
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
        batch = Batch(
            opens=[_meta_row(t.meta) for t in b.opens],
            frames=b.frames,
            items=b.items,
            stderr=b.stderr,
            events=b.events,
            updates={
                t.meta.uid: {**t.updates, "message_count": t.count} for t in b.touched.values()
            },
        )
        if self._child is not None:
            try:
                payload = pickle.dumps(batch, protocol=5)
                _write_all(self._child_fd, len(payload).to_bytes(8, "little") + payload)
                return
            except OSError as e:
                self._warn(
                    f"warning: the recorder process stopped ({e.strerror}); "
                    "recording in this process from now on"
                )
                self._child = None
        if self._sink is None:
            self._sink = SqliteSink(self.db_path, warn=self._warn)
            # The recorder process died with batches it may not have committed: re-open the
            # captures in flight and let the sink count what never reached the database.
            taps = {**self._live, **{t.meta.uid: t for t in b.touched.values()}}
            opened = {m["uid"] for m in batch.opens}
            batch.opens += [_meta_row(t.meta) for uid, t in taps.items() if uid not in opened]
            for uid, t in taps.items():
                batch.updates.setdefault(uid, {**t.updates, "message_count": t.count})
                batch.expect[uid] = t.seq - len(batch.frames.get(uid, ()))
        self._sink.write(batch)


class _Batch:
    __slots__ = ("events", "frame_count", "frames", "items", "nbytes", "opens", "stderr", "touched")

    def __init__(self) -> None:
        self.nbytes = 0
        self.opens: list[Tap] = []
        self.frames: dict[str, list[tuple[Any, ...]]] = {}  # uid -> rows
        self.frame_count = 0
        self.items: list[tuple[Any, ...]] = []
        self.stderr: list[tuple[Any, ...]] = []
        self.events: list[tuple[Any, ...]] = []
        self.touched: dict[int, Tap] = {}

    @property
    def rows(self) -> int:
        return self.frame_count + len(self.stderr) + len(self.events)

    def empty(self) -> bool:
        return not (self.opens or self.frames or self.stderr or self.events or self.touched)


def _meta_row(m: CaptureMeta) -> dict[str, Any]:
    return {
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


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _spawn_child(db_path: Path) -> subprocess.Popen[bytes] | None:
    """The SQLite process; ``None`` when it cannot be started (we then write in-process)."""
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "acp_proxy.record.child", str(db_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=None,
            close_fds=True,
            start_new_session=True,  # a Ctrl-C to the terminal must not cut it short
        )
    except OSError:
        return None

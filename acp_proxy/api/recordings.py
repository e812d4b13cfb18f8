"""Reading recordings from Python: a database or a ``jsonl`` export, its captures, and what
each holds.

What belongs here: :func:`open` and the two classes it leads to — :class:`Recordings` (the
captures of a database or of an export file, search) and :class:`Capture` (its frames, the
reconstructed views, the conformance findings, the agent's stderr and the events, how it
ended). They read through the same functions the command line and the web inspector use
(the store, the folds of :mod:`acp_proxy.reconstruct`, the checker), so a script sees what
``acp-proxy show``, ``tools`` or ``check`` would print. The contract is docs/api.md.
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson

from acp_proxy import sgr
from acp_proxy.api.values import (
    Event,
    FileChange,
    Frame,
    Session,
    StderrLine,
    Terminal,
    ToolCall,
    Turn,
)
from acp_proxy.check.core.findings import Finding
from acp_proxy.errors import StoreError, UsageError
from acp_proxy.events import describe, is_bad
from acp_proxy.events.ending import capture_ending
from acp_proxy.reconstruct import Reconstruction, reconstruct
from acp_proxy.reconstruct import views as rviews
from acp_proxy.store.liveness import capture_state
from acp_proxy.store.reader import Store, StoredFrame
from acp_proxy.store.refs import JSON_COLUMNS, Source, resolve

__all__ = ["Capture", "Recordings", "open"]

_SQLITE = b"SQLite format 3\0"


def open(path: str | Path) -> Recordings:
    """Open a recordings database, or a ``jsonl`` export (``acp-proxy export``/``share``),
    for reading. Raises :class:`~acp_proxy.errors.StoreError` when ``path`` is neither."""
    return Recordings(Path(path))


class Recordings:
    """The captures of a recordings database or of a ``jsonl`` export; a context manager
    (closing it closes the database)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path).expanduser()
        if not self.path.is_file():
            raise StoreError(f"no recordings database or export at {self.path}")
        with builtins.open(self.path, "rb") as f:
            head = f.read(len(_SQLITE))
        self._store: Store | None = None
        self._file: Source | None = None
        if head == _SQLITE:
            self._store = Store(self.path, readonly=True)
        else:
            self._file = resolve(str(self.path), self.path)

    @property
    def is_export(self) -> bool:
        return self._file is not None

    def captures(self) -> list[Capture]:
        """Every capture, oldest first."""
        if self._file is not None:
            return [Capture(self._file)]
        assert self._store is not None
        return [self._in_store(c) for c in self._store.captures()]

    def capture(self, ref: str | int | None = None) -> Capture:
        """A capture by id, ``-1`` (the latest), ``-2``…, or uid prefix; the latest when
        ``ref`` is None. Raises :class:`~acp_proxy.errors.UsageError` when none matches."""
        if self._file is not None:
            if ref not in (None, -1, "-1", "latest"):
                raise UsageError(f"{self.path} holds one capture: ask for it without a ref")
            return Capture(self._file)
        assert self._store is not None
        return self._in_store(self._store.capture(ref))

    def latest(self) -> Capture:
        return self.capture(None)

    def _in_store(self, row: dict[str, Any]) -> Capture:
        assert self._store is not None
        return Capture(Source(row, f"capture {row['id']}", store=self._store))

    def search(self, query: str, *, capture: str | int | None = None, limit: int = 50) -> list[Any]:
        """Frames, stderr and events matching ``query`` (words, "a phrase", prefix*),
        newest first: :class:`acp_proxy.store.search.Hit` values. A database only; what
        was recorded since the last search is indexed first when the file is writable."""
        from acp_proxy.store.db import connect
        from acp_proxy.store.index import catch_up
        from acp_proxy.store.search import search

        if self._store is None:
            raise UsageError("search reads a database, not an export file")
        cid = self.capture(capture).id if capture is not None else None
        try:
            conn = connect(self.path, create=False)
            try:
                catch_up(conn)
            finally:
                conn.close()
        except Exception:  # a read-only file: searched as far as it was indexed
            pass
        return list(search(self._store.conn, query, capture_id=cid, limit=limit))

    def close(self) -> None:
        if self._store is not None:
            self._store.close()

    def __enter__(self) -> Recordings:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class Capture:
    """One capture: its metadata as attributes, and what it holds through methods (each
    reads the recording when called; the reconstruction is folded once and kept)."""

    def __init__(self, source: Source) -> None:
        self._source = source
        self.row: dict[str, Any] = dict(source.capture)  # the capture's columns, as stored

    # -- what it is -------------------------------------------------------------------------

    @property
    def id(self) -> int | None:
        """Its id in the database (None for an export file)."""
        return self.row.get("id")

    def __getattr__(self, name: str) -> Any:
        """The capture's columns (``uid``, ``transport``, ``started_at``, ``exit_code``,
        ``protocol_version``, ``label``…), JSON columns parsed."""
        row = self.__dict__.get("row", {})
        if name not in row:
            raise AttributeError(name)
        value = row[name]
        if name in JSON_COLUMNS and isinstance(value, str):
            try:
                return orjson.loads(value)
            except orjson.JSONDecodeError:
                return value
        return value

    @property
    def live(self) -> bool:
        """Whether its relay is still recording it."""
        return self.id is not None and capture_state(self.row) == "recording"

    @property
    def status(self) -> str:
        """Who ended it and how, as ``acp-proxy captures`` says it (``exit 0``, ``ended by
        client: SIGTERM``, ``proxy killed``…); ``running`` while it is recorded."""
        from acp_proxy.text.captures import capture_row

        return str(capture_row(self.row, self.events_raw())["status"])

    @property
    def ended_by(self) -> str | None:
        """``agent``, ``client``, ``proxy`` or ``peer``; None while nothing says."""
        ending = capture_ending(self.row, self.events_raw())
        return ending.by if ending is not None else None

    # -- what it holds ------------------------------------------------------------------------

    def frames(
        self,
        *,
        method: str | None = None,
        kind: str | None = None,
        direction: str | None = None,
        session: str | None = None,
    ) -> Iterator[Frame]:
        """Its frames in order, read as they are iterated; ``method`` is a glob (``fs/*``)."""
        from acp_proxy.text.timeline import FrameFilter

        keep = FrameFilter(method=method, kind=kind, session=session, direction=direction)
        for f in self._stored():
            if keep(f):
                yield _frame(f)

    def _stored(self) -> Iterator[StoredFrame]:
        store = self._source.store
        if store is not None:
            ended = capture_state(self.row) != "recording"
            yield from store.frames(self.row["id"], ended=ended)
        else:
            yield from self._source.frames()

    def plain_frames(self) -> Iterator[Any]:
        """The frames alone, as :mod:`acp_proxy.protocol.frames` values (what a fold or the
        redactor reads), without the derived fields."""
        return self._source.plain_frames()

    def stderr_chunks(self) -> list[tuple[int, bytes]]:
        """The agent's stderr as it was read: ``(t_ns, bytes)`` per read."""
        return self._source.stderr()

    @functools.cached_property
    def reconstruction(self) -> Reconstruction:
        """What the user saw, folded from the frames (v1 and v2): the views below read it."""
        return reconstruct(self._source.plain_frames())

    def turns(self) -> list[Turn]:
        """The prompt turns; one never answered says why in ``cut_short`` (``agent exited
        3``, ``the client ended it (SIGTERM)``…), as ``show --view turns`` does."""
        from acp_proxy.text.captures import cut_short

        why = None if self.live else cut_short(self.row, self.events_raw())
        out = []
        for t in rviews.turns_json(self.reconstruction):
            t["cutShort"] = why if t["endedSeq"] is None else None
            out.append(_turn(t))
        return out

    def tool_calls(self) -> list[ToolCall]:
        return [_tool(t) for t in rviews.tools_json(self.reconstruction)]

    def terminals(self) -> list[Terminal]:
        return [_terminal(t) for t in rviews.terminals_json(self.reconstruction)]

    def diffs(self) -> list[FileChange]:
        return [_change(c) for c in rviews.diffs_json(self.reconstruction)]

    def sessions(self) -> list[Session]:
        return [_session(s) for s in rviews.sessions_json(self.reconstruction)]

    def findings(self, *, side: str | None = None) -> list[Finding]:
        """What ``acp-proxy check`` finds in it (``side``: ``agent`` or ``client`` only)."""
        from acp_proxy.check.core.checker import Checker

        ending = None if self.live else capture_ending(self.row, self.events_raw())
        checker = Checker().run(((f.frame, f.anomalies) for f in self._stored()), lambda: ending)
        return [f for f in checker.findings if side is None or f.side == side]

    def stderr(self) -> list[StderrLine]:
        """The agent's stderr, line by line, at the time each line was read."""
        out = []
        for t_ns, data in self._source.stderr():
            for raw in data.split(b"\n"):
                if raw:
                    text = sgr.strip(raw.decode("utf-8", "replace")).rstrip("\r")
                    out.append(StderrLine(round(t_ns / 1e6, 3), text, raw))
        return out

    def events_raw(self) -> list[dict[str, Any]]:
        """The events as stored (``detail`` JSON text)."""
        return self._source.events()

    def events(self) -> list[Event]:
        """The process, connection and HTTP events, each with its readable line."""
        from acp_proxy.text.timeline import event_detail

        out = []
        for ev in self.events_raw():
            kind, detail = str(ev.get("kind")), event_detail(ev)
            out.append(Event(round(int(ev["t_ns"]) / 1e6, 3), kind, detail,
                             describe(kind, detail), is_bad(kind)))  # fmt: skip
        return out

    def __repr__(self) -> str:
        name = self.id if self.id is not None else self.row.get("source")
        return f"<Capture {name} {self.row.get('transport')}>"


def _frame(f: StoredFrame) -> Frame:
    return Frame(
        f.seq,
        f.direction.value,
        round(f.frame.t_ns / 1e6, 3),
        f.kind,
        f.method,
        f.msg_id,
        f.session_id,
        f.update_kind,
        f.tool_call_id,
        f.terminal_id,
        f.error_code,
        tuple(f.anomalies),
        f.request_seq,
        None if f.latency_ns is None else round(f.latency_ns / 1e6, 3),
        f.raw,
    )


def _turn(t: dict[str, Any]) -> Turn:
    return Turn(t["index"], t["seq"], t.get("sessionId"), t.get("prompt") or "",
                t.get("agentText") or "", t.get("stopReason"), t.get("error"),
                t.get("cutShort"), t.get("durationMs"), tuple(t.get("toolCallIds") or ()),
                t)  # fmt: skip


def _tool(t: dict[str, Any]) -> ToolCall:
    statuses = tuple(h.get("status") for h in t.get("statusHistory") or () if h.get("status"))
    return ToolCall(str(t.get("toolCallId")), t.get("title"), t.get("kind"), t.get("status"),
                    statuses, t)  # fmt: skip


def _terminal(t: dict[str, Any]) -> Terminal:
    status = t.get("exitStatus") or {}
    return Terminal(str(t.get("terminalId")), t.get("command"), tuple(t.get("args") or ()),
                    tuple(t.get("screen") or ()), status.get("exitCode"), status.get("signal"),
                    t)  # fmt: skip


def _change(c: dict[str, Any]) -> FileChange:
    return FileChange(c["seq"], c.get("path"), str(c.get("operation")), str(c.get("source")),
                      c.get("toolCallId"), c.get("patch"), bool(c.get("stale")),
                      c.get("applies"), c)  # fmt: skip


def _session(s: dict[str, Any]) -> Session:
    return Session(str(s.get("sessionId")), s.get("parentSessionId"),
                   tuple(s.get("children") or ()), s)  # fmt: skip

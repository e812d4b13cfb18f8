"""Live spans from the recorder process.

What belongs here: :class:`LiveTelemetry`, which the recorder process
(:mod:`acp_proxy.record.child`) feeds with the rows it has just committed. It folds each
capture's frames with :class:`~acp_proxy.otel.core.fold.TraceFold` and hands spans to a
:class:`~acp_proxy.otel.sdk.Sender` as soon as they are settled: a turn's spans (the turn,
its tool calls, permission waits, terminals and requests) when the turn ends, everything
else when the capture ends. The relay never sees any of it: it only appends to its
journal, so a slow or dead collector costs dropped telemetry, never a delayed frame.

The relay asks for it in the recorder's environment (:func:`recorder_env`): it names
:func:`from_env` as the recorder's observer (``record.child.OBSERVER_ENV``: recording does
not import telemetry) and gives the settings in ``ACP_PROXY_OTEL``; the standard ``OTEL_*``
variables are read by the exporter.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from acp_proxy import __version__, events
from acp_proxy.errors import UsageError
from acp_proxy.otel.core.fold import CaptureInfo, TraceFold, capture_info
from acp_proxy.otel.core.mapping import resource, spans
from acp_proxy.otel.core.model import AttrValue, latest_semconv
from acp_proxy.protocol.frames import Direction, Frame
from acp_proxy.record.child import OBSERVER_ENV
from acp_proxy.record.core.rows import CaptureFields, FrameRow, OpenRow, Row

__all__ = ["ENV", "FLUSH_S", "LiveTelemetry", "from_env", "recorder_env"]

ENV = "ACP_PROXY_OTEL"
FLUSH_S = 5.0
"""How long the recorder, once the relay is gone and everything is recorded, waits for
the collector to take the last spans."""


def recorder_env(endpoint: str | None, content: bool) -> dict[str, str]:
    """What the relay puts in its recorder's environment to turn live spans on."""
    return {
        OBSERVER_ENV: f"{__name__}:{from_env.__name__}",
        ENV: orjson.dumps({"endpoint": endpoint, "content": content}).decode(),
    }


@dataclass(slots=True)
class _Capture:
    info: CaptureInfo
    resource: dict[str, AttrValue]
    fold: TraceFold = field(default_factory=TraceFold)
    emitted: set[str] = field(default_factory=set)
    ended_turns: int = 0


class LiveTelemetry:
    def __init__(self, endpoint: str | None, *, content: bool, warn: Callable[[str], None]) -> None:
        from acp_proxy.otel.sdk import Sender

        self.content = content
        self.sender = Sender(endpoint, version=__version__, warn=warn)
        self._env = dict(os.environ)
        self._latest = latest_semconv(self._env)
        self._host = socket.gethostname()
        self._captures: dict[str, _Capture] = {}

    def rows(self, rows: list[Row]) -> None:
        """Rows the recorder has committed, in order."""
        touched: dict[str, None] = {}
        ended: list[str] = []
        for row in rows:
            if isinstance(row, FrameRow):
                cap = self._captures.get(row.uid)
                if cap is None:
                    continue
                raw = row.raw if row.parts is None else b"".join(row.parts)
                cap.fold.feed(
                    Frame(row.seq, Direction(row.direction), row.t_ns, raw, row.terminated)
                )
                touched[row.uid] = None
            elif isinstance(row, OpenRow):
                if row.uid not in self._captures:
                    info = capture_info({**row.meta, "uid": row.uid, "proxy_version": __version__})
                    res = resource(info, self._env, host=self._host, version=__version__)
                    self._captures[row.uid] = _Capture(info, res)
            elif isinstance(row, CaptureFields):
                cap = self._captures.get(row.uid)
                end = row.fields.get("ended_ns")
                if cap is not None and isinstance(end, int):
                    cap.info.ended_ns = end
                    ended.append(row.uid)
        for uid in touched:
            if uid not in ended:
                self._emit(uid, final=False)
        for uid in ended:
            self._emit(uid, final=True)

    def _emit(self, uid: str, *, final: bool) -> None:
        cap = self._captures[uid]
        done = sum(1 for t in cap.fold.turns if not t.open)
        if not final and done == cap.ended_turns:
            return
        cap.ended_turns = done
        if final:
            made = spans(cap.info, cap.fold, content=self.content, latest=self._latest)
        else:  # only the turns that ended since: the cost stays per turn, not per session
            new = {f"turn:{t.seq}" for t in cap.fold.turns if not t.open} - cap.emitted
            made = spans(cap.info, cap.fold, content=self.content, groups=new,
                          latest=self._latest)  # fmt: skip
        ready = [s for s in made if s.group not in cap.emitted]
        cap.emitted.update(s.group for s in ready)
        if ready:
            self.sender.submit(ready, cap.resource, uid)
        if final:
            del self._captures[uid]

    def close(self, db: Path, timeout: float = FLUSH_S) -> int:
        """Send what is left, then write each capture's dropped span count into its
        events (``otel_dropped``). Returns the number of spans dropped."""
        for uid in list(self._captures):
            self._emit(uid, final=True)
        dropped = self.sender.close(timeout)
        if dropped:
            _note_drops(db, self.sender.dropped_by)
        return dropped


def _note_drops(db: Path, by_uid: Mapping[str, int]) -> None:
    with contextlib.suppress(sqlite3.Error):
        conn = sqlite3.connect(db, timeout=10)
        try:
            with conn:
                for uid, n in by_uid.items():
                    event = events.OtelDropped(spans=n)
                    conn.execute(
                        "INSERT INTO events (capture_id, t_ns, kind, detail) SELECT id, "
                        "COALESCE(ended_ns, 0), ?, ? FROM captures WHERE uid = ?",
                        [event.kind, orjson.dumps(event.detail()).decode(), uid],
                    )
        finally:
            conn.close()


def from_env(env: Mapping[str, str], warn: Callable[[str], None]) -> LiveTelemetry | None:
    """The live telemetry the relay asked for, or ``None`` (not asked, or the extra is
    missing: said once, and recording goes on)."""
    raw = env.get(ENV)
    if not raw:
        return None
    try:
        conf = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(conf, dict):
        return None
    from acp_proxy.otel.sdk import require

    try:
        require()
    except UsageError as e:
        warn(f"warning: no live spans: {e}")
        return None
    endpoint = conf.get("endpoint")
    return LiveTelemetry(
        endpoint if isinstance(endpoint, str) else None,
        content=conf.get("content") is True,
        warn=warn,
    )

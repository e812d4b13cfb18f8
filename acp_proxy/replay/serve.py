"""Stand in for one side from a recording: the I/O around the pure stand-ins.

What belongs here: loading a recording (a capture in the database or a ``jsonl`` export),
choosing one session of it, pacing (``--timing``), and running the stand-ins over real
transports: :func:`serve_stdio` puts an :class:`~acp_proxy.replay.core.agent.AgentStandIn` where
the agent would be (``replay.listen`` does it for WebSocket and Streamable HTTP clients);
``replay.run`` drives a real agent with the recorded client side. Matching and comparing
live in ``replay.match``, ``replay.agent``, ``replay.client`` and ``replay.compare``, which
do no I/O.

Over stdio nothing but protocol bytes reaches stdout; diagnostics go to stderr.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp_proxy.errors import UsageError
from acp_proxy.protocol.framing import LineFramer
from acp_proxy.protocol.jsonrpc import Kind
from acp_proxy.relay.core.admission import is_loopback, listen_address
from acp_proxy.replay.core.agent import AgentStandIn, Emit, MatchMode
from acp_proxy.replay.core.match import ReplayMessage, parse_messages, session_of
from acp_proxy.store.refs import resolve
from acp_proxy.text.safe import visible
from acp_proxy.transports.stdio import CHUNK, write_all

__all__ = [
    "Pacer",
    "Recording",
    "Say",
    "Timing",
    "finish",
    "load_recording",
    "parse_listen",
    "report",
    "say_on_stderr",
    "select_session",
    "serve_stdio",
]

Say = Callable[[str], None]


def say_on_stderr(message: str) -> None:
    sys.stderr.write(f"acp-proxy replay: {visible(message)}\n")
    sys.stderr.flush()


@dataclass(slots=True)
class Recording:
    """A recording ready to replay: its parsed messages and where it came from."""

    messages: list[ReplayMessage]
    source: str
    capture: dict[str, Any] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)  # the capture's events

    @property
    def protocol_version(self) -> int | None:
        for m in self.messages:
            if m.method == "initialize" and m.kind == Kind.REQUEST and isinstance(m.params, dict):
                v = m.params.get("protocolVersion")
                return v if isinstance(v, int) else None
        return None


def load_recording(ref: str | None, db: Path, *, session: str | None = None) -> Recording:
    """``ref`` is a path to a ``jsonl`` export, or a capture in ``db`` (id, uid prefix,
    ``-1``; the latest when ``None``)."""
    source = resolve(ref, db)
    try:
        frames = [f.frame for f in source.frames()]
        events = source.events()
    finally:
        source.close()
    capture = source.capture
    source_name = source.name
    messages = parse_messages(frames)
    if session is not None:
        messages = select_session(messages, session)
    if not messages:
        raise UsageError(f"{source_name} holds no messages to replay")
    return Recording(messages, source_name, capture, events)


def select_session(messages: list[ReplayMessage], session: str) -> list[ReplayMessage]:
    """The messages of one session, plus those of the connection (``initialize``, …)."""
    by_seq = {m.seq: m for m in messages}
    sessions = {session_of(m, by_seq) for m in messages} - {None}
    if session not in sessions:
        known = ", ".join(sorted(map(str, sessions))) or "none"
        raise UsageError(f"no session {session!r} in the recording (sessions: {known})")
    keep = []
    for m in messages:
        sid = session_of(m, by_seq)
        if sid is None and m.method in ("session/new", "session/fork") and m.partner is not None:
            sid = session_of(by_seq[m.partner])  # the request that created a session
        if sid is None or sid == session:
            keep.append(m)
    return keep


@dataclass(frozen=True, slots=True)
class Timing:
    """``fast`` (no waiting), ``original`` (recorded gaps) or ``xN`` (N times faster)."""

    speed: float | None
    max_gap: float | None = None  # seconds: a longer gap (after the speed-up) is cut to this

    @classmethod
    def parse(cls, text: str, max_gap: float | None = None) -> Timing:
        if max_gap is not None and not max_gap > 0:
            raise UsageError("--max-gap must be more than zero seconds")
        if text == "fast":
            return cls(None, max_gap)
        if text == "original":
            return cls(1.0, max_gap)
        if text.startswith("x"):
            try:
                speed = float(text[1:])
            except ValueError:
                speed = 0.0
            if speed > 0:
                return cls(speed, max_gap)
        raise UsageError(f"--timing must be fast, original or xN (like x2 or x0.5), not {text!r}")


class Pacer:
    """Sends agent messages at their recorded offsets from the client message they follow."""

    def __init__(self, timing: Timing, say: Say = say_on_stderr) -> None:
        self.timing = timing
        self.say = say
        self.anchor_rec = 0
        self.last_rec = 0  # the recorded time of the last message paced
        self.anchor_live = time.monotonic_ns()

    def anchor(self, recorded: ReplayMessage | None) -> None:
        if recorded is not None:
            self.anchor_rec = self.last_rec = recorded.t_ns
            self.anchor_live = time.monotonic_ns()

    async def wait(self, emit: Emit) -> None:
        speed = self.timing.speed
        if speed is None or emit.recorded is None:
            return
        t = emit.recorded.t_ns
        gap = (t - max(self.last_rec, self.anchor_rec)) / speed / 1e9
        limit = self.timing.max_gap
        if limit is not None and gap > limit:  # cut the excess out of the recorded time line
            self.anchor_rec += int((gap - limit) * speed * 1e9)
            self.say(
                f"a recorded gap of {gap:.1f} s before #{emit.recorded.seq} was capped at "
                f"{limit:g} s (--max-gap)"
            )
        self.last_rec = max(self.last_rec, t)
        offset = (t - self.anchor_rec) / speed
        delay = (self.anchor_live + offset - time.monotonic_ns()) / 1e9
        if delay > 0:
            await asyncio.sleep(delay)


def report(stand_in: AgentStandIn, start: int, say: Say) -> int:
    """Say the problems found since ``start``; the number found so far."""
    for p in stand_in.problems[start:]:
        say(("note: " if p.note else "") + p.message)
    return len(stand_in.problems)


def finish(stand_in: AgentStandIn, reported: int, say: Say) -> bool:
    """End a replay: report what is left and the summary; True when it ran clean."""
    stand_in.finish()
    report(stand_in, reported, say)
    _summary(stand_in, say)
    return stand_in.clean


def _summary(stand_in: AgentStandIn, say: Say) -> None:
    bad = [p for p in stand_in.problems if not p.note]
    if bad:
        say(f"the replay did not run clean: {len(bad)} problem(s)")
    else:
        say("the replay ran clean")


class ReplaySession:
    """One client's replay, whatever carries it (stdio, WebSocket, Streamable HTTP): the
    stand-in, the pacing of what it sends, and the problems said so far. The transport
    hands it each message the client sent (:meth:`receive`), writes what :meth:`paced`
    yields, and ends it with :meth:`close`, then :meth:`finish`."""

    def __init__(self, recording: Recording, mode: MatchMode, timing: Timing, say: Say) -> None:
        self.stand_in = AgentStandIn(recording.messages, mode)
        self.pacer = Pacer(timing, say)
        self.say = say
        self._out: asyncio.Queue[Emit | None] = asyncio.Queue()
        self._reported = 0
        for e in self.stand_in.start():
            self._out.put_nowait(e)

    def receive(self, raw: bytes) -> None:
        """A message from the client: what the stand-in answers is queued to be sent."""
        emits = self.stand_in.receive(raw)
        self.pacer.anchor(self.stand_in.last_matched)
        for e in emits:
            self._out.put_nowait(e)
        self._reported = report(self.stand_in, self._reported, self.say)

    async def paced(self) -> AsyncIterator[Emit]:
        """What the stand-in sends, each at its recorded time, until :meth:`close`."""
        while (emit := await self._out.get()) is not None:
            await self.pacer.wait(emit)
            yield emit

    def close(self) -> None:
        """The client is gone: :meth:`paced` ends after what is queued."""
        self._out.put_nowait(None)

    def finish(self) -> bool:
        """Report what is left and the summary; True when the replay ran clean."""
        return finish(self.stand_in, self._reported, self.say)


async def serve_stdio(
    recording: Recording,
    *,
    mode: MatchMode = MatchMode.LENIENT,
    timing: Timing = Timing(None),
    stdin_fd: int = 0,
    stdout_fd: int = 1,
    say: Say = say_on_stderr,
) -> bool:
    """Be the agent on our stdin/stdout until the client closes stdin; True when clean."""
    replay = ReplaySession(recording, mode, timing, say)

    async def writer() -> None:
        async for emit in replay.paced():
            data = emit.data + b"\n" if emit.terminated else emit.data
            try:
                await asyncio.to_thread(write_all, stdout_fd, data)
            except OSError as e:
                say(f"the client stopped reading ({e.strerror}); stopping")
                return

    async def reader() -> None:
        framer = LineFramer()
        while True:
            try:
                chunk = await asyncio.to_thread(os.read, stdin_fd, CHUNK)
            except OSError:
                chunk = b""
            for piece in framer.feed(chunk) if chunk else framer.end():
                if piece.raw.strip():
                    replay.receive(piece.raw)
            if not chunk:
                break
        replay.close()

    async with asyncio.TaskGroup() as tg:
        tg.create_task(reader())
        tg.create_task(writer())
    return replay.finish()


def parse_listen(text: str) -> tuple[str, int]:
    """``--listen HOST:PORT`` as every listener reads it, on a loopback address only: a
    replay answers with what was recorded, so it has no token and no other address
    (docs/design.md principle 6)."""
    host, port = listen_address(text)
    if not is_loopback(host):
        raise UsageError(f"replay listens on loopback addresses only, not {host!r}")
    return host, port

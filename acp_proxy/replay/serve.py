"""Stand in for one side from a recording: the I/O around the pure stand-ins.

What belongs here: loading a recording (a capture in the database or a ``jsonl`` export),
choosing one session of it, pacing (``--timing``), and running the stand-ins over real
transports: :func:`serve_stdio` and :func:`serve_websocket` put an
:class:`~acp_proxy.replay.agent.AgentStandIn` where the agent would be; ``replay.run`` drives a
real agent with the recorded client side. Matching and comparing live in ``replay.match``,
``replay.agent``, ``replay.client`` and ``replay.compare``, which do no I/O.

Over stdio nothing but protocol bytes reaches stdout; diagnostics go to stderr.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp_proxy.errors import UsageError
from acp_proxy.export.jsonl import read_jsonl
from acp_proxy.protocol.frames import Frame
from acp_proxy.protocol.framing import LineFramer
from acp_proxy.protocol.jsonrpc import Kind
from acp_proxy.replay.agent import AgentStandIn, Emit, MatchMode
from acp_proxy.replay.match import Message, parse_messages, session_of
from acp_proxy.store.reader import Store
from acp_proxy.text.safe import visible
from acp_proxy.transports.stdio import CHUNK, write_all

__all__ = [
    "Recording",
    "Timing",
    "load_recording",
    "parse_listen",
    "select_session",
    "serve_stdio",
    "serve_websocket",
]

Say = Callable[[str], None]


def _stderr(message: str) -> None:
    sys.stderr.write(f"acp-proxy replay: {visible(message)}\n")
    sys.stderr.flush()


@dataclass(slots=True)
class Recording:
    """A recording ready to replay: its parsed messages and where it came from."""

    messages: list[Message]
    source: str
    capture: dict[str, Any] = field(default_factory=dict)

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
    frames: list[Frame]
    capture: dict[str, Any] = {}
    if ref is not None and (ref.endswith(".jsonl") or os.sep in ref or Path(ref).is_file()):
        path = Path(ref)
        if not path.is_file():
            raise UsageError(f"no recording file {path}")
        try:
            with open(path, "rb") as f:
                frames = list(read_jsonl(f))
        except (ValueError, KeyError) as e:
            raise UsageError(f"{path} is not a jsonl export: {e}") from e
        source = str(path)
        capture = {"source": source, "uid": path.stem}
    else:
        store = Store(db)
        try:
            capture = store.capture(ref)
            frames = [f.frame for f in store.frames(capture["id"])]
        finally:
            store.close()
        source = f"capture {capture['id']}"
    messages = parse_messages(frames)
    if session is not None:
        messages = select_session(messages, session)
    if not messages:
        raise UsageError(f"{source} holds no messages to replay")
    return Recording(messages, source, capture)


def select_session(messages: list[Message], session: str) -> list[Message]:
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

    @classmethod
    def parse(cls, text: str) -> Timing:
        if text == "fast":
            return cls(None)
        if text == "original":
            return cls(1.0)
        if text.startswith("x"):
            try:
                speed = float(text[1:])
            except ValueError:
                speed = 0.0
            if speed > 0:
                return cls(speed)
        raise UsageError(f"--timing must be fast, original or xN (like x2 or x0.5), not {text!r}")


class _Pacer:
    """Sends agent messages at their recorded offsets from the client message they follow."""

    def __init__(self, timing: Timing) -> None:
        self.timing = timing
        self.anchor_rec = 0
        self.anchor_live = time.monotonic_ns()

    def anchor(self, recorded: Message | None) -> None:
        if recorded is not None:
            self.anchor_rec = recorded.t_ns
            self.anchor_live = time.monotonic_ns()

    async def wait(self, emit: Emit) -> None:
        if self.timing.speed is None or emit.recorded is None:
            return
        offset = (emit.recorded.t_ns - self.anchor_rec) / self.timing.speed
        delay = (self.anchor_live + offset - time.monotonic_ns()) / 1e9
        if delay > 0:
            await asyncio.sleep(delay)


def _report(stand_in: AgentStandIn, start: int, say: Say) -> int:
    for p in stand_in.problems[start:]:
        say(("note: " if p.note else "") + p.message)
    return len(stand_in.problems)


def _finish(stand_in: AgentStandIn, reported: int, say: Say) -> bool:
    """End a replay: report what is left and the summary; True when it ran clean."""
    stand_in.finish()
    _report(stand_in, reported, say)
    _summary(stand_in, say)
    return stand_in.clean


def _summary(stand_in: AgentStandIn, say: Say) -> None:
    bad = [p for p in stand_in.problems if not p.note]
    if bad:
        say(f"the replay did not run clean: {len(bad)} problem(s)")
    else:
        say("the replay ran clean")


async def serve_stdio(
    recording: Recording,
    *,
    mode: MatchMode = MatchMode.LENIENT,
    timing: Timing = Timing(None),
    stdin_fd: int = 0,
    stdout_fd: int = 1,
    say: Say = _stderr,
) -> bool:
    """Be the agent on our stdin/stdout until the client closes stdin; True when clean."""
    stand_in = AgentStandIn(recording.messages, mode)
    out: asyncio.Queue[Emit | None] = asyncio.Queue()
    pacer = _Pacer(timing)
    reported = 0

    async def writer() -> None:
        while (emit := await out.get()) is not None:
            await pacer.wait(emit)
            data = emit.data + b"\n" if emit.terminated else emit.data
            try:
                await asyncio.to_thread(write_all, stdout_fd, data)
            except OSError as e:
                say(f"the client stopped reading ({e.strerror}); stopping")
                return

    async def reader() -> None:
        nonlocal reported
        for e in stand_in.start():
            out.put_nowait(e)
        framer = LineFramer()
        while True:
            try:
                chunk = await asyncio.to_thread(os.read, stdin_fd, CHUNK)
            except OSError:
                chunk = b""
            pieces = framer.feed(chunk) if chunk else framer.end()
            for piece in pieces:
                if not piece.raw.strip():
                    continue
                emits = stand_in.receive(piece.raw)
                pacer.anchor(stand_in.last_matched)
                for e in emits:
                    out.put_nowait(e)
                reported = _report(stand_in, reported, say)
            if not chunk:
                break
        out.put_nowait(None)

    async with asyncio.TaskGroup() as tg:
        tg.create_task(reader())
        tg.create_task(writer())
    return _finish(stand_in, reported, say)


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` on a loopback address (docs/design.md principle 6)."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not port.isdigit():
        raise UsageError(f"--listen wants HOST:PORT, like 127.0.0.1:8765, not {text!r}")
    if host != "localhost":
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise UsageError(f"replay listens on loopback addresses only, not {host!r}")
    return host, int(port)


async def serve_websocket(
    recording: Recording,
    host: str,
    port: int,
    *,
    mode: MatchMode = MatchMode.LENIENT,
    timing: Timing = Timing(None),
    keep_serving: bool = False,
    say: Say = _stderr,
    on_listening: Callable[[str], None] | None = None,
) -> bool:
    """Be the agent for WebSocket clients at ``ws://HOST:PORT/acp``: one text message per
    JSON-RPC message. Serves one connection (or, with ``keep_serving``, each in turn, every
    one from the start of the recording); True when every replay ran clean."""
    from websockets.asyncio.server import ServerConnection, serve
    from websockets.exceptions import ConnectionClosed
    from websockets.http11 import Request, Response

    from acp_proxy.transports.websocket import WsSettings

    results: list[bool] = []
    finished = asyncio.Event()

    def check(connection: ServerConnection, request: Request) -> Response | None:
        if request.path.split("?")[0] != "/acp":
            return connection.respond(404, "replay serves ACP at /acp\n")
        if "Origin" in request.headers:
            return connection.respond(403, "browser origins are refused\n")
        return None

    async def handler(ws: ServerConnection) -> None:
        stand_in = AgentStandIn(recording.messages, mode)
        pacer = _Pacer(timing)
        out: asyncio.Queue[Emit | None] = asyncio.Queue()
        reported = 0
        say(f"client connected from {ws.remote_address}")

        async def writer() -> None:
            while (emit := await out.get()) is not None:
                await pacer.wait(emit)
                try:
                    await ws.send(emit.data, text=True)  # the recorded bytes, as a text frame
                except ConnectionClosed:
                    return

        async def reader() -> None:
            nonlocal reported
            for e in stand_in.start():
                out.put_nowait(e)
            try:
                while True:
                    raw = await ws.recv(decode=False)  # payload bytes, never decoded by us
                    emits = stand_in.receive(raw)
                    pacer.anchor(stand_in.last_matched)
                    for e in emits:
                        out.put_nowait(e)
                    reported = _report(stand_in, reported, say)
            except ConnectionClosed:
                pass
            out.put_nowait(None)

        async with asyncio.TaskGroup() as tg:
            tg.create_task(reader())
            tg.create_task(writer())
        results.append(_finish(stand_in, reported, say))
        if not keep_serving:
            finished.set()

    async with serve(
        handler,
        host,
        port,
        process_request=check,
        server_header=None,
        **WsSettings().common(),  # no compression, no pings, 64 MiB messages, bounded queues
    ) as server:
        sock = next(iter(server.sockets))
        bound = sock.getsockname()
        shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        url = f"ws://{shown}:{bound[1]}/acp"
        say(f"standing in for the agent of {recording.source} at {url}")
        if on_listening is not None:
            on_listening(url)
        await finished.wait()
    return all(results)

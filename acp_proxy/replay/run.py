"""Drive a real agent with a recording's client side, record the run, compare.

What belongs here: the I/O of ``replay client`` — spawning the agent, pumping its stdio
through a :class:`~acp_proxy.replay.core.client.ClientStandIn`, recording the new run as a new
capture with the recorder (the same way the stdio relay records: every chunk goes to the
tap before it is written on), time-outs, ending the agent, and putting the two runs side
by side (``replay.compare``) in an :class:`Outcome`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp_proxy import events
from acp_proxy.errors import AgentSpawnError
from acp_proxy.protocol.frames import Direction
from acp_proxy.protocol.framing import LineFramer
from acp_proxy.record.link import CaptureMeta, RecorderLink, Tap
from acp_proxy.replay.core.client import ClientStandIn, Step
from acp_proxy.replay.core.compare import (
    EXIT_CODE,
    compare,
    nothing_compared,
    parse_ignore,
    summarise_run,
)
from acp_proxy.replay.core.ending import client_ending, client_eof_ns, own_exit
from acp_proxy.replay.core.match import Problem
from acp_proxy.replay.core.summary import Divergence, RunSummary
from acp_proxy.replay.serve import Recording, load_recording
from acp_proxy.transports.process import AgentProcess

__all__ = ["Outcome", "replay_client"]

C2A, A2C = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT
_DRAIN = 2.0  # after the agent's group has ended, how long its stdout may still be read


@dataclass(slots=True)
class Outcome:
    """What a client replay found."""

    source: str
    capture_id: int | None
    exit_code: int | None
    problems: list[Problem]
    divergences: list[Divergence]
    recorded: RunSummary
    replayed: RunSummary
    original_exit: int | None = None
    notes: list[str] = field(default_factory=list)
    killed: list[str] = field(default_factory=list)  # what ending the agent took

    @property
    def diverged(self) -> bool:
        return bool(self.divergences) or any(not p.note for p in self.problems)

    def to_json(self) -> dict[str, Any]:
        return {
            "recording": self.source,
            "replay_capture": self.capture_id,
            "diverged": self.diverged,
            "divergences": [d.to_json() for d in self.divergences],
            "problems": [p.to_json() for p in self.problems],
            "agent_exit_code": self.exit_code,
            "recorded": self.recorded.to_json(),
            "replayed": self.replayed.to_json(),
            "killed": self.killed,
        }

    def report(self) -> list[str]:
        lines = [
            f"replayed the client of {self.source}; the new run is capture {self.capture_id}",
            f"compared {len(self.recorded.turns)} turn(s), "
            f"{sum(len(t.tool_calls) for t in self.recorded.turns)} tool call(s), "
            f"{len(self.recorded.files)} file(s) written",
        ]
        bad = [p for p in self.problems if not p.note]
        for p in self.problems:
            lines.append(f"  {'note' if p.note else 'replay'} · {p.message}")
        for k in self.killed:
            lines.append(f"  note · ending the agent took a signal: {k}")
        for side, run in (("recorded", self.recorded), ("replayed", self.replayed)):
            lines.extend(f"  note · {side} {note}" for note in run.retry_notes())
        for d in self.divergences:
            lines.append(f"  {d}")
        if self.diverged:
            lines.append(
                f"DIVERGED: {len(self.divergences)} difference(s), {len(bad)} replay problem(s)"
            )
        else:
            lines.append("no divergence")
        return lines


async def _drive(
    stand_in: ClientStandIn,
    argv: Sequence[str],
    tap: Tap,
    *,
    timeout: float,
    grace: float,
    cwd: str | None,
    ending: tuple[float, str] | None = None,
) -> _Ended:
    """Run the agent through the stand-in, then end it as the recorded client did
    (``ending``: a signal some seconds after closing its stdin), and its process group
    (bounded: no pipe is waited on past the end of the group)."""
    agent = AgentProcess.spawn(argv, tap, grace=grace, cwd=cwd)
    stdout, stdin = await agent.pipes()
    run = _Run(stand_in, tap, stdin, timeout)
    reader = asyncio.get_running_loop().create_task(run.read_agent(stdout))
    by_client = False
    try:
        await run.play()
        tap.end_stream(C2A)
        tap.event(events.ClientEof())
        with contextlib.suppress(OSError):
            stdin.close()
        if ending is not None:
            by_client = await _end_as_recorded(agent, tap, *ending, grace)
        await agent.stop("replay finished")
        # what the group wrote before it ended is read; a process outside the group that
        # still holds the agent's stdout is not waited for
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(reader), _DRAIN)
    finally:
        if not reader.done():
            reader.cancel()
            tap.event(events.AgentStdoutAbandoned(reason="still open after the agent ended"))
        with contextlib.suppress(asyncio.CancelledError):
            await reader
    code, _sig = await agent.finish("replay finished")
    return _Ended(code, agent.signalled or by_client, agent.killed)


async def _end_as_recorded(
    agent: AgentProcess, tap: Tap, after: float, name: str, grace: float
) -> bool:
    """The recorded client sent ``name`` ``after`` seconds after it closed stdin (at most
    ``grace`` here): do the same, unless the agent has exited by then. Whether it was
    sent."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(agent.wait(), min(after, grace))
        return False
    sig = getattr(signal, name, None)
    if not isinstance(sig, signal.Signals):
        return False
    tap.event(
        events.Signal(signal=name, forwarded_to=agent.proc.pid, reason="as the recorded client")
    )
    agent.signal_group(sig)
    return True


@dataclass(frozen=True, slots=True)
class _Ended:
    code: int
    by_us: bool  # the agent itself had to be signalled: its exit code is not its own
    killed: list[str]


class _Run:
    """The recorded client's side of one run: its steps sent when they are due, what the
    agent writes fed to the stand-in (and its answers sent back)."""

    def __init__(
        self, stand_in: ClientStandIn, tap: Tap, stdin: asyncio.StreamWriter, timeout: float
    ) -> None:
        self.stand_in, self.tap, self.stdin, self.timeout = stand_in, tap, stdin, timeout
        self.changed = asyncio.Event()  # the agent wrote something, or went away
        self.agent_gone = asyncio.Event()
        self.heard = False  # the agent wrote something on stdout

    def send(self, data: bytes) -> None:
        line = data + b"\n"
        self.tap.chunk(C2A, line)
        if not self.stdin.is_closing():
            self.stdin.write(line)

    async def read_agent(self, stdout: asyncio.StreamReader) -> None:
        framer = LineFramer()
        while True:
            chunk = await stdout.read(1 << 20)
            if chunk:
                self.heard = True
                self.tap.chunk(A2C, chunk)
            else:
                self.tap.end_stream(A2C)
            for piece in framer.feed(chunk) if chunk else framer.end():
                for reply in self.stand_in.receive(piece.raw):
                    self.send(reply)
            self.changed.set()
            if not chunk:
                break
        self.agent_gone.set()
        self.changed.set()

    async def wait_for(self, predicate: Callable[[], bool | None]) -> bool:
        """Wait until ``predicate()`` is not False; False on time-out."""
        deadline = time.monotonic() + self.timeout
        while predicate() is False:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), remaining)
        return True

    async def play(self) -> None:
        stand_in, gone = self.stand_in, self.agent_gone
        steps = stand_in.steps
        for i, step in enumerate(steps):
            state = stand_in.ready(step)
            if state is False:
                if not await self.wait_for(functools.partial(_due, stand_in, step, gone)):
                    if not self.heard:  # nobody there: waiting at every later point helps nobody
                        stand_in.silent(step, self.timeout)
                        stand_in.finish(unsent=steps[i:], why="the agent is silent")
                        return
                    stand_in.give_up(step, f"{self.timeout:g} s passed")
                state = stand_in.ready(step)
            if gone.is_set() and state is not True:
                stand_in.finish(unsent=steps[i:])
                return
            if state is None:
                stand_in.give_up(step, "the agent finished the request that was open")
            self.send(stand_in.send(step))
            with contextlib.suppress(ConnectionError):
                await self.stdin.drain()
        await self.wait_for(lambda: stand_in.outstanding == 0 or gone.is_set())
        # and what the agent said after that in the recording, before the client closed
        await self.wait_for(lambda: stand_in.tail_ready() is not False or gone.is_set())
        stand_in.finish()


def _due(stand_in: ClientStandIn, step: Step, gone: asyncio.Event) -> bool | None:
    """Whether ``step`` may go (``ClientStandIn.ready``); None when the agent went away
    while it waited."""
    state = stand_in.ready(step)
    if state is False and gone.is_set():
        return None
    return state


def replay_client(
    recording: Recording,
    argv: Sequence[str],
    db: Path,
    *,
    ignore: Sequence[str] = (),
    timeout: float = 30.0,
    grace: float = 3.0,
    cwd: str | None = None,
) -> Outcome:
    """Drive ``argv`` with the recorded client, record the run into ``db``, compare."""
    rec_cwd = _recorded_cwd(recording)
    pair = (rec_cwd, cwd) if rec_cwd and cwd else None
    patterns = parse_ignore(ignore)
    stand_in = ClientStandIn(
        recording.messages, cwd=pair, ignore=patterns, client_eof_ns=client_eof_ns(recording.events)
    )
    writer = RecorderLink(db)
    label = f"replay client of {recording.source}"
    meta = CaptureMeta(transport="stdio", agent_command=list(argv), cwd=os.getcwd(), label=label)
    tap = writer.open_capture(meta)
    code: int | None = None
    ended: _Ended | None = None
    try:
        ending = client_ending(recording.events)
        ended = asyncio.run(
            _drive(stand_in, argv, tap, timeout=timeout, grace=grace, cwd=cwd, ending=ending)
        )
        code = ended.code
    except AgentSpawnError as e:
        tap.event(events.SpawnFailed(error=str(e)))
        raise
    finally:
        tap.close(exit_code=code)
        writer.close()
    new = load_recording(meta.uid, db)  # by uid: the writer numbers captures, not the tap
    capture_id = new.capture.get("id")
    recorded = summarise_run(
        recording.messages, ignore=patterns, client_eof_ns=client_eof_ns(recording.events)
    )
    replayed = summarise_run(new.messages, ignore=patterns, mapper=stand_in.mapper)
    divergences = compare(recorded, replayed)
    empty = nothing_compared(recorded)
    if empty is not None:
        stand_in.problems.add("nothing_compared", f"nothing to compare: {empty}")
    original_exit = recording.capture.get("exit_code")
    recorded_own = own_exit(recording.capture, recording.events)
    replayed_own = None if ended is None or ended.by_us else ended.code
    compared = EXIT_CODE not in patterns and None not in (recorded_own, replayed_own)
    if compared and recorded_own != replayed_own:
        divergences.append(Divergence("run", "agent exit code", recorded_own, replayed_own))
    return Outcome(
        source=recording.source,
        capture_id=capture_id,
        exit_code=code,
        problems=stand_in.problems,
        divergences=divergences,
        recorded=recorded,
        replayed=replayed,
        original_exit=original_exit if isinstance(original_exit, int) else None,
        killed=ended.killed if ended is not None else [],
    )


def _recorded_cwd(recording: Recording) -> str | None:
    for m in recording.messages:
        if m.method == "session/new" and isinstance(m.params, dict):
            cwd = m.params.get("cwd")
            if isinstance(cwd, str):
                return cwd
    return None

"""Drive a real agent with a recording's client side, record the run, compare.

What belongs here: the I/O of ``replay client`` — spawning the agent, pumping its stdio
through a :class:`~acp_proxy.replay.client.ClientStandIn`, recording the new run as a new
capture with the recorder (the same way the stdio relay records: every chunk goes to the
tap before it is written on), time-outs, ending the agent, and putting the two runs side
by side (``replay.compare``) in an :class:`Outcome`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp_proxy.errors import AgentSpawnError
from acp_proxy.protocol.frames import Direction
from acp_proxy.protocol.framing import LineFramer
from acp_proxy.record.link import CaptureMeta, RecorderLink, Tap
from acp_proxy.replay.client import ClientStandIn
from acp_proxy.replay.compare import compare, nothing_compared, parse_ignore, summarise_run
from acp_proxy.replay.match import Problem
from acp_proxy.replay.serve import Recording, load_recording
from acp_proxy.replay.summary import Divergence, RunSummary
from acp_proxy.transports.stdio import exit_status, spawn_error

__all__ = ["Outcome", "replay_client"]

C2A, A2C = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT
_LIMIT = 64 * 1024 * 1024


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
) -> int | None:
    """Run the agent through the stand-in; returns its exit code."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=_LIMIT,
            cwd=cwd,
        )
    except OSError as e:  # the spawn rule of the relay: 127 not found, 126 not executable
        raise spawn_error(argv[0], e) from e
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    stdin, stdout, stderr = proc.stdin, proc.stdout, proc.stderr
    tap.update(pid=proc.pid)
    tap.event("spawn", pid=proc.pid, argv=list(argv))
    changed = asyncio.Event()
    agent_gone = asyncio.Event()
    heard = False  # the agent wrote something on stdout

    def send(data: bytes) -> None:
        line = data + b"\n"
        tap.chunk(C2A, line)
        if not stdin.is_closing():
            stdin.write(line)

    async def read_agent() -> None:
        nonlocal heard
        framer = LineFramer()
        while True:
            chunk = await stdout.read(1 << 20)
            if chunk:
                heard = True
                tap.chunk(A2C, chunk)
            else:
                tap.end_stream(A2C)
            for piece in framer.feed(chunk) if chunk else framer.end():
                for reply in stand_in.receive(piece.raw):
                    send(reply)
            changed.set()
            if not chunk:
                break
        agent_gone.set()
        changed.set()

    async def read_stderr() -> None:
        while chunk := await stderr.read(1 << 16):
            tap.stderr(chunk)
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.buffer.write(chunk)
                sys.stderr.buffer.flush()

    async def wait_for(predicate: Any) -> bool:
        """Wait until ``predicate()`` is not False; False on time-out."""
        deadline = time.monotonic() + timeout
        while predicate() is False:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), remaining)
        return True

    async def play() -> None:
        steps = stand_in.steps
        for i, step in enumerate(steps):
            state = stand_in.ready(step)
            if state is False:
                if not await wait_for(lambda s=step: _or_gone(stand_in.ready(s), agent_gone)):
                    if not heard:  # nobody there: waiting at every later point helps nobody
                        stand_in.silent(step, timeout)
                        stand_in.finish(unsent=steps[i:], why="the agent is silent")
                        return
                    stand_in.give_up(step, f"{timeout:g} s passed")
                state = stand_in.ready(step)
            if agent_gone.is_set() and state is not True:
                stand_in.finish(unsent=steps[i:])
                return
            if state is None:
                stand_in.give_up(step, "the agent finished the request that was open")
            send(stand_in.send(step))
            with contextlib.suppress(ConnectionError):
                await stdin.drain()
        await wait_for(lambda: stand_in.outstanding == 0 or agent_gone.is_set())
        stand_in.finish()

    async with asyncio.TaskGroup() as tg:
        tg.create_task(read_agent())
        tg.create_task(read_stderr())
        await play()
        tap.end_stream(C2A)
        tap.event("client_eof")
        with contextlib.suppress(OSError):
            stdin.close()
        try:
            code = await asyncio.wait_for(proc.wait(), grace)
        except TimeoutError:
            tap.event("terminate", signal="SIGTERM", reason="replay finished")
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
            try:
                code = await asyncio.wait_for(proc.wait(), grace)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                code = await proc.wait()
    rc, sig = exit_status(code)
    tap.event("exit", returncode=code, exit_code=rc, signal=sig)
    return rc


def _or_gone(state: bool | None, gone: asyncio.Event) -> bool | None:
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
    stand_in = ClientStandIn(recording.messages, cwd=pair, ignore=patterns)
    writer = RecorderLink(db)
    label = f"replay client of {recording.source}"
    meta = CaptureMeta(transport="stdio", agent_command=list(argv), cwd=os.getcwd(), label=label)
    tap = writer.open_capture(meta)
    code: int | None = None
    try:
        code = asyncio.run(_drive(stand_in, argv, tap, timeout=timeout, grace=grace, cwd=cwd))
    except AgentSpawnError as e:
        tap.event("spawn_failed", error=str(e))
        raise
    finally:
        tap.close(exit_code=code)
        writer.close()
    new = load_recording(meta.uid, db)  # by uid: the writer numbers captures, not the tap
    capture_id = new.capture.get("id")
    recorded = summarise_run(recording.messages, ignore=patterns)
    replayed = summarise_run(new.messages, ignore=patterns, mapper=stand_in.mapper)
    divergences = compare(recorded, replayed)
    empty = nothing_compared(recorded)
    if empty is not None:
        stand_in.problems.append(
            Problem("nothing_compared", f"nothing to compare: {empty}", None, False, ())
        )
    original_exit = recording.capture.get("exit_code")
    if isinstance(original_exit, int) and code is not None and original_exit != code:
        divergences.append(Divergence("run", "agent exit code", original_exit, code))
    return Outcome(
        source=recording.source,
        capture_id=capture_id,
        exit_code=code,
        problems=stand_in.problems,
        divergences=divergences,
        recorded=recorded,
        replayed=replayed,
        original_exit=original_exit if isinstance(original_exit, int) else None,
    )


def _recorded_cwd(recording: Recording) -> str | None:
    for m in recording.messages:
        if m.method == "session/new" and isinstance(m.params, dict):
            cwd = m.params.get("cwd")
            if isinstance(cwd, str):
                return cwd
    return None

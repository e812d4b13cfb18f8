"""The agent process, its pipes and the recording: what each of their events means and says."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from acp_proxy.events.base import (
    UNSET,
    D,
    Event,
    Unset,
    join,
    number,
    paren,
    signame,
    size_of,
    text,
)

# -- the agent process ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Spawn(Event):
    """The agent process was started."""

    kind = "spawn"

    pid: int
    argv: list[str]

    @classmethod
    def line(cls, d: D) -> str:
        argv = d.get("argv")
        cmd = " ".join(a for a in argv if isinstance(a, str)) if isinstance(argv, list) else ""
        pid = number(d, "pid")
        return join("agent started", f"pid {pid}" if pid is not None else None, sep=", ") + (
            f": {cmd}" if cmd else ""
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class SpawnFailed(Event):
    """The agent command could not be started (a listener answered the client ``status``)."""

    kind, bad = "spawn_failed", True

    status: int | Unset = UNSET
    error: str
    request: dict[str, Any] | Unset = UNSET

    @classmethod
    def line(cls, d: D) -> str:
        return f"agent could not be started: {text(d, 'error') or 'unknown error'}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Exit(Event):
    """The agent process exited (``exit_code`` as a shell reports it: 128+N for signal N)."""

    kind = "exit"

    returncode: int
    exit_code: int
    signal: int | None
    runtime_ms: float

    @classmethod
    def line(cls, d: D) -> str:
        sig, code, ms = number(d, "signal"), number(d, "exit_code"), number(d, "runtime_ms")
        after = f" after {ms / 1000:.2f} s" if ms is not None else ""
        if sig:
            return f"agent killed by signal {int(sig)}{signame(int(sig))}{after}"
        return f"agent exited {int(code) if code is not None else '?'}{after}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Signal(Event):
    """A signal sent to us (by the editor, a terminal) was passed on to the agent's process
    group."""

    kind = "signal"

    signal: str
    forwarded_to: int | Unset = UNSET
    reason: str | Unset = UNSET

    @classmethod
    def line(cls, d: D) -> str:
        return f"{text(d, 'signal') or 'a signal'} from the editor passed on to the agent"


@dataclass(frozen=True, slots=True, kw_only=True)
class Terminate(Event):
    """We ended the agent, or (with ``group`` and ``pids``) what it left in its process
    group once it had exited."""

    kind = "terminate"

    signal: str
    reason: str
    group: int | Unset = UNSET
    pids: list[int] | Unset = UNSET

    @classmethod
    def line(cls, d: D) -> str:
        sig = text(d, "signal") or "a signal"
        if d.get("group") is not None:
            pids = d.get("pids")
            n = len(pids) if isinstance(pids, list) else 0
            return f"{sig} to {n or 'the'} process(es) the agent left in its group"
        return f"{sig} sent to the agent{paren(text(d, 'reason'))}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientEof(Event):
    """The client closed our stdin (the agent's stdin is closed in turn)."""

    kind = "client_eof"

    @classmethod
    def line(cls, d: D) -> str:
        return "client closed stdin"


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentEof(Event):
    """The agent closed its stdout."""

    kind = "agent_eof"

    @classmethod
    def line(cls, d: D) -> str:
        return "agent closed stdout"


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentStdinClosed(Event):
    """The agent stopped reading its stdin: what the client sent after is recorded,
    flagged undelivered."""

    kind, bad = "agent_stdin_closed", True

    error: str | None

    @classmethod
    def line(cls, d: D) -> str:
        return f"agent stopped reading its stdin{paren(text(d, 'error'))}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientStdoutClosed(Event):
    """The client stopped reading our stdout."""

    kind, bad = "client_stdout_closed", True

    error: str | None

    @classmethod
    def line(cls, d: D) -> str:
        return f"client stopped reading{paren(text(d, 'error'))}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientNotRead(Event):
    """The agent had exited: the client's further bytes were no longer read."""

    kind = "client_not_read"

    reason: str

    @classmethod
    def line(cls, d: D) -> str:
        return "client no longer read: the agent has exited"


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentStdoutAbandoned(Event):
    """A replay stopped reading an agent's stdout that stayed open after its group ended."""

    kind = "agent_stdout_abandoned"

    reason: str

    @classmethod
    def line(cls, d: D) -> str:
        return "agent's stdout still open after it ended: no longer read"


# -- recording -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Gap(Event):
    """Traffic that never reached the database: the range ``start``–``end`` of ``stream``,
    counted in ``bytes`` or (WebSocket, HTTP) ``messages``."""

    kind, bad = "gap", True

    stream: str
    start: int
    end: int
    bytes_: int | Unset = UNSET
    messages: int | Unset = UNSET
    frames: int | None
    reason: str | None
    after_seq: int | None

    @classmethod
    def line(cls, d: D) -> str:
        frames, size, msgs = number(d, "frames"), number(d, "bytes"), number(d, "messages")
        what = join(
            f"{int(frames)} frame(s)" if frames else None,
            size_of(size),
            f"{int(msgs)} message(s)" if msgs and not frames else None,
        )
        return f"lost: {what or 'traffic'} of {text(d, 'stream') or '?'}" + paren(text(d, "reason"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Chain(Event):
    """This capture is a hop of a proxy chain (docs/protocol.md §13.4): ``chain`` (the
    chain's id, its outer capture's uid), ``parent`` (the uid of the capture whose program
    started this one), ``role``."""

    kind = "chain"

    chain: str
    parent: str | None
    role: str

    @classmethod
    def line(cls, d: D) -> str:
        chain, parent = text(d, "chain"), text(d, "parent")
        under = f", started under capture {parent[:12]}" if parent and parent != chain else ""
        return f"{text(d, 'role') or 'hop'} of proxy chain {(chain or '?')[:12]}{under}"


@dataclass(frozen=True, slots=True, kw_only=True)
class RecorderNote(Event):
    """What the recorder said once the relay was gone and nobody read its stderr."""

    kind = "recorder_note"

    message: str

    @classmethod
    def line(cls, d: D) -> str:
        return f"recorder: {text(d, 'message') or ''}".rstrip()


@dataclass(frozen=True, slots=True, kw_only=True)
class OtelDropped(Event):
    """Live OpenTelemetry spans the collector did not take."""

    kind, bad = "otel_dropped", True

    spans: int

    @classmethod
    def line(cls, d: D) -> str:
        n = number(d, "spans")
        return f"{int(n) if n is not None else 'some'} OpenTelemetry span(s) not taken"

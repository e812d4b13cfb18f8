"""The agent process, its pipes and the recording: what each of their events means and says."""

from __future__ import annotations

from acp_proxy.events.base import (
    D,
    Event,
    join,
    number,
    paren,
    signame,
    size_of,
    text,
)

# -- the agent process ---------------------------------------------------------------------


class Spawn(Event):
    """The agent process was started (``pid``, ``argv``)."""

    kind = "spawn"

    @classmethod
    def line(cls, d: D) -> str:
        argv = d.get("argv")
        cmd = " ".join(a for a in argv if isinstance(a, str)) if isinstance(argv, list) else ""
        pid = number(d, "pid")
        return join("agent started", f"pid {pid}" if pid is not None else None, sep=", ") + (
            f": {cmd}" if cmd else ""
        )


class SpawnFailed(Event):
    """The agent command could not be started (``error``)."""

    kind, bad = "spawn_failed", True

    @classmethod
    def line(cls, d: D) -> str:
        return f"agent could not be started: {text(d, 'error') or 'unknown error'}"


class Exit(Event):
    """The agent process exited (``exit_code`` as a shell reports it, ``signal``,
    ``runtime_ms``)."""

    kind = "exit"

    @classmethod
    def line(cls, d: D) -> str:
        sig, code, ms = number(d, "signal"), number(d, "exit_code"), number(d, "runtime_ms")
        after = f" after {ms / 1000:.2f} s" if ms is not None else ""
        if sig:
            return f"agent killed by signal {int(sig)}{signame(int(sig))}{after}"
        return f"agent exited {int(code) if code is not None else '?'}{after}"


class Signal(Event):
    """A signal sent to us (by the editor, a terminal) was passed on to the agent's process
    group (``signal``, ``forwarded_to``)."""

    kind = "signal"

    @classmethod
    def line(cls, d: D) -> str:
        return f"{text(d, 'signal') or 'a signal'} from the editor passed on to the agent"


class Terminate(Event):
    """We ended the agent (``signal``, ``reason``), or what it left in its process group
    once it had exited (``group``, ``pids``)."""

    kind = "terminate"

    @classmethod
    def line(cls, d: D) -> str:
        sig = text(d, "signal") or "a signal"
        if d.get("group") is not None:
            pids = d.get("pids")
            n = len(pids) if isinstance(pids, list) else 0
            return f"{sig} to {n or 'the'} process(es) the agent left in its group"
        return f"{sig} sent to the agent{paren(text(d, 'reason'))}"


class ClientEof(Event):
    """The client closed our stdin (the agent's stdin is closed in turn)."""

    kind = "client_eof"

    @classmethod
    def line(cls, d: D) -> str:
        return "client closed stdin"


class AgentEof(Event):
    """The agent closed its stdout."""

    kind = "agent_eof"

    @classmethod
    def line(cls, d: D) -> str:
        return "agent closed stdout"


class AgentStdinClosed(Event):
    """The agent stopped reading its stdin: what the client sent after is recorded,
    flagged undelivered (``error``)."""

    kind, bad = "agent_stdin_closed", True

    @classmethod
    def line(cls, d: D) -> str:
        return f"agent stopped reading its stdin{paren(text(d, 'error'))}"


class ClientStdoutClosed(Event):
    """The client stopped reading our stdout (``error``)."""

    kind, bad = "client_stdout_closed", True

    @classmethod
    def line(cls, d: D) -> str:
        return f"client stopped reading{paren(text(d, 'error'))}"


class ClientNotRead(Event):
    """The agent had exited: the client's further bytes were no longer read (``reason``)."""

    kind = "client_not_read"

    @classmethod
    def line(cls, d: D) -> str:
        return "client no longer read: the agent has exited"


class AgentStdoutAbandoned(Event):
    """A replay stopped reading an agent's stdout that stayed open after its group ended."""

    kind = "agent_stdout_abandoned"

    @classmethod
    def line(cls, d: D) -> str:
        return "agent's stdout still open after it ended: no longer read"


# -- recording -----------------------------------------------------------------------------


class Gap(Event):
    """Traffic that never reached the database (``stream``, ``start``, ``end``, ``bytes`` or
    ``messages``, ``frames``, ``reason``, ``after_seq``)."""

    kind, bad = "gap", True

    @classmethod
    def line(cls, d: D) -> str:
        frames, size, msgs = number(d, "frames"), number(d, "bytes"), number(d, "messages")
        what = join(
            f"{int(frames)} frame(s)" if frames else None,
            size_of(size),
            f"{int(msgs)} message(s)" if msgs and not frames else None,
        )
        return f"lost: {what or 'traffic'} of {text(d, 'stream') or '?'}" + paren(text(d, "reason"))


class Chain(Event):
    """This capture is a hop of a proxy chain (docs/protocol.md §13.4): ``chain`` (the
    chain's id, its outer capture's uid), ``parent`` (the uid of the capture whose program
    started this one), ``role``."""

    kind = "chain"

    @classmethod
    def line(cls, d: D) -> str:
        chain, parent = text(d, "chain"), text(d, "parent")
        under = f", started under capture {parent[:12]}" if parent and parent != chain else ""
        return f"{text(d, 'role') or 'hop'} of proxy chain {(chain or '?')[:12]}{under}"


class RecorderNote(Event):
    """What the recorder said once the relay was gone and nobody read its stderr
    (``message``)."""

    kind = "recorder_note"

    @classmethod
    def line(cls, d: D) -> str:
        return f"recorder: {text(d, 'message') or ''}".rstrip()


class OtelDropped(Event):
    """Live OpenTelemetry spans the collector did not take (``spans``)."""

    kind, bad = "otel_dropped", True

    @classmethod
    def line(cls, d: D) -> str:
        n = number(d, "spans")
        return f"{int(n) if n is not None else 'some'} OpenTelemetry span(s) not taken"

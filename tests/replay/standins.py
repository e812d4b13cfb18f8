"""Live messages fed to the replay stand-ins for playbooks, and what they say back.

What belongs here: the inputs (``Start``, ``Client``, ``Agent``, ``Next``, ``Finish``), the
outputs in short form (``Replays(seq)`` for the recorded bytes as they were, ``Sends`` for
a rewritten or made-up message, ``Waits``, ``Problem``), recordings built from values, and
the two drivers, which run the stand-ins as ``replay/serve.py`` and ``replay/run.py`` do
(``tests/replay/test_replay_playbooks.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from support.playbook import Playbook

from acp_proxy.protocol.frames import Direction, Frame
from acp_proxy.replay.core.agent import AgentStandIn, Emit, MatchMode
from acp_proxy.replay.core.client import ClientStandIn
from acp_proxy.replay.core.match import ReplayMessage, parse_messages

C, A = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT

# -- inputs --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Start:
    """The stand-in agent is up: what it says before anyone speaks."""


@dataclass(frozen=True)
class Client:
    value: Any  # a JSON value, or bytes as they are


@dataclass(frozen=True)
class Agent:
    value: Any


@dataclass(frozen=True)
class Next:
    """The client stand-in's next step: sent when it may go, else what it waits for."""


@dataclass(frozen=True)
class Finish:
    """The other side went away."""


# -- outputs -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Replays:
    seq: int  # the recorded message, byte for byte


@dataclass(frozen=True)
class Sends:
    value: Any


@dataclass(frozen=True)
class Waits:
    what: str


@dataclass(frozen=True)
class Problem:
    kind: str
    seq: int | None = None


def recording(*items: tuple[Direction, Any]) -> list[ReplayMessage]:
    frames = [
        Frame(i, d, i * 1000, v if isinstance(v, bytes) else json.dumps(v).encode())
        for i, (d, v) in enumerate(items)
    ]
    return parse_messages(frames)


def raw(value: Any) -> bytes:
    return value if isinstance(value, bytes) else json.dumps(value).encode()


def req(i: Any, method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "method": method, "params": params}


def note(method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def ok(i: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "result": result}


def chunk(text: str, sid: str = "s1") -> dict[str, Any]:
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    return note("session/update", sessionId=sid, update=update)


class _Outputs:
    """What both drivers share: out-going bytes in short form, new problems after them."""

    messages: list[ReplayMessage]
    reported = 0

    def out(self, data: bytes, recorded: ReplayMessage | None) -> Any:
        if recorded is not None and data == recorded.raw:
            return Replays(recorded.seq)
        return Sends(json.loads(data))

    def problems(self, problems: list[Any]) -> list[Problem]:
        new = problems[self.reported :]
        self.reported = len(problems)
        return [Problem(p.kind, p.seq) for p in new]


class AgentDriver(_Outputs):
    def __init__(self, messages: list[ReplayMessage], mode: MatchMode = MatchMode.LENIENT) -> None:
        self.stand_in = AgentStandIn(messages, mode)

    def feed(self, item: Any) -> list[Any]:
        s = self.stand_in
        emits: list[Emit] = []
        if isinstance(item, Start):
            emits = s.start()
        elif isinstance(item, Client):
            emits = s.receive(raw(item.value))
        elif isinstance(item, Finish):
            s.finish()
        else:
            raise AssertionError(f"an input the agent stand-in does not take: {item!r}")
        return [self.out(e.data, e.recorded) for e in emits] + self.problems(s.problems)


class ClientDriver(_Outputs):
    def __init__(self, messages: list[ReplayMessage], **options: Any) -> None:
        self.stand_in = ClientStandIn(messages, **options)
        self.next = 0

    def feed(self, item: Any) -> list[Any]:
        s = self.stand_in
        out: list[Any] = []
        if isinstance(item, Next):
            step = s.steps[self.next]
            state = s.ready(step)
            if state is False:
                assert step.wait is not None
                return [Waits(step.wait.describe())]
            if state is None:  # what it waits for cannot come any more (replay/run.py)
                s.give_up(step, "the agent finished the request that was open")
            self.next += 1
            out = [self.out(s.send(step), step.message)]
        elif isinstance(item, Agent):
            out = [self.out(answer, None) for answer in s.receive(raw(item.value))]
        elif isinstance(item, Finish):
            s.finish(unsent=s.steps[self.next :])
        else:
            raise AssertionError(f"an input the client stand-in does not take: {item!r}")
        return out + self.problems(s.problems)

    def out(self, data: bytes, recorded: ReplayMessage | None) -> Any:
        # an answer the stand-in took from the recording, unchanged, is a replay too
        match = recorded or next((m for m in self.stand_in.messages if m.raw == data), None)
        return super().out(data, match)


def agent(*items: tuple[Direction, Any], mode: MatchMode = MatchMode.LENIENT) -> Playbook[Any]:
    return Playbook(AgentDriver(recording(*items), mode))


def client(*items: tuple[Direction, Any], **options: Any) -> Playbook[Any]:
    return Playbook(ClientDriver(recording(*items), **options))

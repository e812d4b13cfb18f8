"""Hostile values never crash the checker: any JSON value in any field it reads, any bytes.

The checker turns an unforeseen exception into a ``capture.incomplete`` "not checked"
finding so a report still comes out; these tests demand that it never needs to.
"""

from __future__ import annotations

import copy
from typing import Any

from corpus import CASES, A, C, _dumps, frames
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_proxy.check.core.checker import Checker
from acp_proxy.check.core.findings import SEVERITIES
from acp_proxy.check.core.rules import RULES
from acp_proxy.protocol.frames import Direction, Frame

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)
KEYS = [
    "id",
    "method",
    "params",
    "result",
    "error",
    "sessionId",
    "update",
    "sessionUpdate",
    "toolCallId",
    "terminalId",
    "options",
    "outcome",
    "optionId",
    "prompt",
    "mcpServers",
    "protocolVersion",
    "clientCapabilities",
    "agentCapabilities",
    "capabilities",
    "state",
    "stopReason",
    "messageId",
    "title",
    "data",
    "output",
    "cwd",
    "command",
    "type",
    "code",
    "message",
    "sessions",
    "mode",
    "fs",
    "terminal",
    "session",
    "jsonrpc",
]
MESSAGE_CASES = [c for c in CASES if all(isinstance(e[1], dict) for e in c.entries)]


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [at] if at else []
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_paths(v, (*at, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_paths(v, (*at, i)))
    return out


def _run(entries: list[Any]) -> None:
    checker = Checker()
    for frame, flags in frames(entries):
        checker.feed(frame, flags)
    checker.finish()
    for f in checker.findings:
        assert f.rule in RULES and f.severity in SEVERITIES
        assert not f.message.startswith("not checked"), f.message


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_value_in_any_field(data: st.DataObject) -> None:
    case = data.draw(st.sampled_from(MESSAGE_CASES))
    entries = copy.deepcopy(case.entries)
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(entries) - 1))
        message = entries[i][1]
        paths = _paths(message)
        value = data.draw(JSON)
        if paths and data.draw(st.booleans()):
            path = data.draw(st.sampled_from(paths))
            target = message
            for p in path[:-1]:
                target = target[p]
            target[path[-1]] = value
        elif isinstance(message, dict):
            target = message.get("params") if isinstance(message.get("params"), dict) else message
            target[data.draw(st.sampled_from(KEYS))] = value
    _run(entries)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.binary(max_size=200), st.booleans()), max_size=12))
def test_any_bytes(lines: list[tuple[bool, bytes, bool]]) -> None:
    checker = Checker()
    for seq, (c2a, raw, terminated) in enumerate(lines):
        d = Direction.CLIENT_TO_AGENT if c2a else Direction.AGENT_TO_CLIENT
        checker.feed(Frame(seq, d, seq, raw, terminated))
    checker.finish()
    assert not [f for f in checker.findings if f.message.startswith("not checked")]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), JSON), max_size=10))
def test_any_json_frames_after_a_clean_start(items: list[tuple[bool, Any]]) -> None:
    entries = [*CASES[0].entries, *((C if c2a else A, v) for c2a, v in items)]
    _run([e if isinstance(e[1], dict) else (e[0], _dumps(e[1])) for e in entries])

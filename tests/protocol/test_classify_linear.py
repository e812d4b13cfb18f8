"""Classification costs a small constant per byte on any input: no Python-level loop over
the bytes of a frame (counted as executed lines, not timed), whatever the brackets."""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

import pytest

from acp_proxy.protocol import jsonrpc
from acp_proxy.protocol.jsonrpc import classify

SIZE = 1 << 20
CASES = {
    "pairs": b"[]" * (SIZE // 2),
    "deep": b"[" * (SIZE // 2) + b"]" * (SIZE // 2),
    "deep-then-pairs": b"[" * 3999 + b"[]" * (SIZE // 2) + b"]" * 3999,
    "strings-with-brackets": b'{"a":"[[[[\\"[["}' * (SIZE // 16),
    "noise-then-pairs": b"xx{" + b"[]" * (SIZE // 2),
}


def _lines_run(raw: bytes) -> tuple[int, Any]:
    count = 0
    module = jsonrpc.__file__

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if frame.f_code.co_filename != module:
            return None
        if event == "line":
            count += 1
        return tracer

    sys.settrace(tracer)
    try:
        info = classify(raw)
    finally:
        sys.settrace(None)
    return count, info


@pytest.mark.parametrize("name", sorted(CASES))
def test_classify_runs_no_loop_per_byte(name: str) -> None:
    lines, info = _lines_run(CASES[name])
    assert lines < 2_000, lines  # a loop over the bytes would run a million lines
    assert info.kind == "invalid"


def test_too_deep_is_still_flagged() -> None:
    assert "too_deep" in classify(CASES["deep"]).anomalies
    ok = b'{"jsonrpc":"2.0","method":"m","params":' + b"[" * 50 + b"]" * 50 + b"}"
    assert classify(ok).kind == "notification"

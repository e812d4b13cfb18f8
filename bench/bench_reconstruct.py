"""Benchmark of reconstruction: folding a 1 000 000-frame synthetic capture.

The capture is built in memory (a v2 session: prompts, message chunks, tool call upserts
and content chunks, agent-owned terminals fed by base64 output chunks, diffs with patch
text, permission prompts, state updates; and a v1 session with client terminals, fs reads
and writes and v1 diffs), then folded by :func:`acp_proxy.reconstruct.reconstruct`. Times are
reported for the fold alone, for the fold fed from a ``jsonl`` export on disk (the path the
CLI takes for a file), and for producing every JSON view (which renders each terminal's
screen).

    python bench/bench_reconstruct.py             # 1 000 000 frames
    python bench/bench_reconstruct.py --frames 100000

Figures and the machine they came from are in docs/performance.md ("Reconstruction").
"""

from __future__ import annotations

import argparse
import base64
import gc
import os
import platform
import resource
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from acp_proxy.export.jsonl import read_jsonl
from acp_proxy.protocol.frames import Direction, Frame
from acp_proxy.reconstruct import reconstruct
from acp_proxy.reconstruct.views import reconstruction_json

C2A, A2C = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT
CWD = "/home/u/proj"


def _upd(sid: str, update: dict[str, object]) -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": sid, "update": update},
    }


def _v2_turn(n: int) -> Iterator[tuple[Direction, dict[str, object]]]:
    """One v2 turn of 60 messages."""
    s = "v2"
    rid = 1000 + n
    yield (
        C2A,
        {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "session/prompt",
            "params": {"sessionId": s, "prompt": [{"type": "text", "text": f"task {n}"}]},
        },
    )
    yield A2C, {"jsonrpc": "2.0", "id": rid, "result": {"messageId": f"u{n}"}}
    yield A2C, _upd(s, {"sessionUpdate": "state_update", "state": "running"})
    for i in range(10):
        yield (
            A2C,
            _upd(
                s,
                {
                    "sessionUpdate": "agent_message_chunk",
                    "messageId": f"m{n}",
                    "content": {"type": "text", "text": f"word {i} "},
                },
            ),
        )
    tc, term = f"call_{n}", f"term_{n}"
    yield (
        A2C,
        _upd(
            s,
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": tc,
                "title": "cargo test",
                "kind": "execute",
                "status": "pending",
                "rawInput": {"cmd": "cargo test"},
            },
        ),
    )
    yield (
        A2C,
        {
            "jsonrpc": "2.0",
            "id": n,
            "method": "session/request_permission",
            "params": {
                "sessionId": s,
                "title": "Run?",
                "subject": {"type": "tool_call", "toolCall": {"toolCallId": tc}},
                "options": [
                    {"optionId": "y", "name": "Yes", "kind": "allow_once"},
                    {"optionId": "_l", "name": "Later", "kind": "_defer"},
                ],
            },
        },
    )
    yield (
        C2A,
        {
            "jsonrpc": "2.0",
            "id": n,
            "result": {"outcome": {"outcome": "selected", "optionId": "y"}},
        },
    )
    yield (
        A2C,
        _upd(
            s,
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": tc,
                "status": "in_progress",
                "content": [{"type": "terminal", "terminalId": term}],
                "capabilities": {"cancel": {}},
            },
        ),
    )
    yield (
        A2C,
        _upd(
            s,
            {
                "sessionUpdate": "terminal_update",
                "terminalId": term,
                "command": "cargo test",
                "cwd": CWD,
                "size": {"cols": 100, "rows": 30},
            },
        ),
    )
    for i in range(30):
        data = f"\x1b[32mtest {n}.{i} ... ok\x1b[0m ✔\r\n".encode()
        yield (
            A2C,
            _upd(
                s,
                {
                    "sessionUpdate": "terminal_output_chunk",
                    "terminalId": term,
                    "data": base64.b64encode(data).decode(),
                },
            ),
        )
    yield (
        A2C,
        _upd(
            s,
            {"sessionUpdate": "terminal_update", "terminalId": term, "exitStatus": {"exitCode": 0}},
        ),
    )
    path = f"{CWD}/src/f{n % 50}.rs"
    patch = f"diff --git {path} {path}\n--- {path}\n+++ {path}\n@@ -1 +1 @@\n-a{n}\n+b{n}\n"
    yield (
        A2C,
        _upd(
            s,
            {
                "sessionUpdate": "tool_call_content_chunk",
                "toolCallId": tc,
                "content": {
                    "type": "diff",
                    "changes": [{"operation": "modify", "path": path, "fileType": "text"}],
                    "patch": {"format": "git_patch", "text": patch},
                },
            },
        ),
    )
    yield (
        A2C,
        _upd(
            s,
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": tc,
                "status": "completed",
                "rawOutput": None,
            },
        ),
    )
    yield (
        A2C,
        _upd(
            s,
            {
                "sessionUpdate": "plan_update",
                "plan": {
                    "type": "items",
                    "planId": "p",
                    "entries": [
                        {"content": f"step {n}", "priority": "high", "status": "completed"}
                    ],
                },
            },
        ),
    )
    yield A2C, _upd(s, {"sessionUpdate": "usage_update", "used": n, "size": 200000})
    for i in range(5):
        yield (
            A2C,
            _upd(
                s,
                {
                    "sessionUpdate": "agent_message_chunk",
                    "messageId": f"m{n}",
                    "content": {"type": "text", "text": f"done {i} "},
                },
            ),
        )
    yield (
        A2C,
        _upd(
            s,
            {
                "sessionUpdate": "state_update",
                "state": "idle",
                "stopReason": "end_turn",
                "background": [],
            },
        ),
    )


def _v1_turn(n: int) -> Iterator[tuple[Direction, dict[str, object]]]:
    """One v1-shaped turn of 20 messages (client terminal, fs read/write, v1 diff)."""
    s = "v1"
    path = f"{CWD}/v1/f{n % 50}.txt"
    yield (
        A2C,
        _upd(
            s,
            {
                "sessionUpdate": "tool_call",
                "toolCallId": f"r{n}",
                "title": "Read",
                "kind": "read",
                "locations": [{"path": path}],
            },
        ),
    )
    yield (
        A2C,
        {
            "jsonrpc": "2.0",
            "id": f"r{n}",
            "method": "fs/read_text_file",
            "params": {"sessionId": s, "path": path},
        },
    )
    yield C2A, {"jsonrpc": "2.0", "id": f"r{n}", "result": {"content": f"line {n}\n" * 20}}
    yield (
        A2C,
        _upd(
            s, {"sessionUpdate": "tool_call_update", "toolCallId": f"r{n}", "status": "completed"}
        ),
    )
    yield (
        A2C,
        _upd(
            s,
            {
                "sessionUpdate": "tool_call",
                "toolCallId": f"e{n}",
                "title": "Edit",
                "kind": "edit",
                "content": [
                    {
                        "type": "diff",
                        "path": path,
                        "oldText": f"line {n}\n" * 20,
                        "newText": f"line {n}\n" * 19 + "changed\n",
                    }
                ],
            },
        ),
    )
    yield (
        A2C,
        {
            "jsonrpc": "2.0",
            "id": f"w{n}",
            "method": "fs/write_text_file",
            "params": {"sessionId": s, "path": path, "content": f"line {n}\n" * 19 + "changed\n"},
        },
    )
    yield C2A, {"jsonrpc": "2.0", "id": f"w{n}", "result": {}}
    yield (
        A2C,
        _upd(
            s, {"sessionUpdate": "tool_call_update", "toolCallId": f"e{n}", "status": "completed"}
        ),
    )
    yield (
        A2C,
        {
            "jsonrpc": "2.0",
            "id": f"c{n}",
            "method": "terminal/create",
            "params": {"sessionId": s, "command": "make", "args": ["test"], "cwd": CWD},
        },
    )
    yield C2A, {"jsonrpc": "2.0", "id": f"c{n}", "result": {"terminalId": f"t{n}"}}
    yield (
        A2C,
        _upd(
            s,
            {
                "sessionUpdate": "tool_call",
                "toolCallId": f"x{n}",
                "title": "make test",
                "kind": "execute",
                "status": "in_progress",
                "content": [{"type": "terminal", "terminalId": f"t{n}"}],
            },
        ),
    )
    for i in range(3):
        yield (
            A2C,
            {
                "jsonrpc": "2.0",
                "id": f"o{n}.{i}",
                "method": "terminal/output",
                "params": {"sessionId": s, "terminalId": f"t{n}"},
            },
        )
        yield (
            C2A,
            {
                "jsonrpc": "2.0",
                "id": f"o{n}.{i}",
                "result": {"output": "ok\r\n" * (i + 1), "truncated": False},
            },
        )
    yield (
        A2C,
        {
            "jsonrpc": "2.0",
            "id": f"x{n}",
            "method": "terminal/wait_for_exit",
            "params": {"sessionId": s, "terminalId": f"t{n}"},
        },
    )
    yield C2A, {"jsonrpc": "2.0", "id": f"x{n}", "result": {"exitCode": 0}}
    yield (
        A2C,
        {
            "jsonrpc": "2.0",
            "id": f"l{n}",
            "method": "terminal/release",
            "params": {"sessionId": s, "terminalId": f"t{n}"},
        },
    )


def build(total: int) -> list[Frame]:
    head = [
        (
            C2A,
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {"protocolVersion": 2, "info": {"name": "b", "version": "1"}},
            },
        ),
        (
            A2C,
            {
                "jsonrpc": "2.0",
                "id": 0,
                "result": {"protocolVersion": 2, "info": {"name": "b", "version": "1"}},
            },
        ),
    ]
    frames: list[Frame] = []
    t = 0

    def add(d: Direction, m: dict[str, object]) -> None:
        nonlocal t
        t += 50_000
        raw = bytes(memoryview(orjson.dumps(m)))  # an exact-size copy: orjson over-allocates
        frames.append(Frame(len(frames), d, t, raw))

    for d, m in head:
        add(d, m)
    n = 0
    while len(frames) < total:
        for d, m in _v2_turn(n):
            add(d, m)
        for d, m in _v1_turn(n):
            add(d, m)
        n += 1
    return frames[:total]


def _rss_mb() -> float:
    """Resident memory now (Linux ``/proc``; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6
    except OSError:
        return 0.0


def timed(label: str, fn: object) -> tuple[float, object]:
    gc.collect()
    start = time.perf_counter()
    value = fn()  # type: ignore[operator]
    took = time.perf_counter() - start
    print(f"  {label:<44} {took:7.2f} s")
    return took, value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=1_000_000)
    args = ap.parse_args()
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs")
    _, frames = timed(f"build {args.frames:,} frames in memory", lambda: build(args.frames))
    assert isinstance(frames, list)
    size = sum(len(f.raw) for f in frames)
    print(f"  ({size / 1e6:.0f} MB of frames)")
    before = _rss_mb()
    took, r = timed("reconstruct (fold, in memory)", lambda: reconstruct(frames))
    gc.collect()
    grown = _rss_mb() - before
    print(f"  → {len(frames) / took:,.0f} frames/s, {size / took / 1e6:.0f} MB/s")
    print(
        f"  ({len(r.tool_calls):,} tool calls, {len(r.terminals):,} terminals, "  # type: ignore[attr-defined]
        f"{len(r.files.changes):,} file changes, {len(r.turns):,} turns)"  # type: ignore[attr-defined]
    )
    timed("reconstruct --at the middle", lambda: reconstruct(frames, at=len(frames) // 2))
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "capture.jsonl"
        with open(path, "wb") as f:
            for fr in frames:
                f.write(
                    orjson.dumps(
                        {
                            "seq": fr.seq,
                            "direction": fr.direction.value,
                            "t_ns": fr.t_ns,
                            "text": fr.raw.decode(),
                        }
                    )
                    + b"\n"
                )
        print(f"  (jsonl export: {path.stat().st_size / 1e6:.0f} MB)")

        def from_file() -> object:
            with open(path, "rb") as f:
                return reconstruct(read_jsonl(f))

        timed("reconstruct from a jsonl export on disk", from_file)
    timed("every JSON view (renders each screen)", lambda: reconstruction_json(r))  # type: ignore[arg-type]
    print(f"  the reconstruction added {grown:,.0f} MB to the process (RSS)")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  peak RSS {rss:,.0f} MB (mostly building the synthetic capture in memory)")


if __name__ == "__main__":
    main()

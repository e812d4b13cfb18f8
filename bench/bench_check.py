"""Benchmark of ``acp-proxy check``: 1 000 000 frames of clean traffic, v1 and v2.

Two synthetic captures are built in memory, half the frames each: an ACP v1 session
(prompts, message chunks, tool calls, permission requests, fs reads, client terminals, plans)
and an ACP v2 session (the turns of ``bench_reconstruct.py``: state updates, tool call
upserts and content chunks, agent-owned terminals fed by base64 chunks, diffs, permissions).
Every frame is classified, paired, validated against the bundled JSON Schema of its version
and run through the behaviour rules. The traffic is valid, so the run also proves there is
no false positive on it. Times are reported for the checker alone and for the path the
command takes for a ``jsonl`` export on disk.

    python bench/bench_check.py                  # 1 000 000 frames
    python bench/bench_check.py --frames 100000

Figures and the machine they came from are in docs/check.md ("Speed").
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_reconstruct import _v2_turn

from acp_proxy.check.core.checker import Checker
from acp_proxy.check.source import from_jsonl
from acp_proxy.protocol.frames import Direction, Frame

C2A, A2C = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT
CWD = "/home/u/proj"
Message = tuple[Direction, dict[str, object]]


def _req(i: object, method: str, params: dict[str, object]) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": i, "method": method, "params": params}


def _res(i: object, result: dict[str, object]) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": i, "result": result}


def _upd(update: dict[str, object], sid: str = "s1") -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": sid, "update": update},
    }


def _v1_head() -> Iterator[Message]:
    caps = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}
    yield C2A, _req(0, "initialize", {"protocolVersion": 1, "clientCapabilities": caps})
    yield A2C, _res(0, {"protocolVersion": 1, "agentCapabilities": {"loadSession": True}})
    yield C2A, _req(1, "session/new", {"cwd": CWD, "mcpServers": []})
    yield A2C, _res(1, {"sessionId": "s1"})


def _v1_turn(n: int) -> Iterator[Message]:
    """One v1 turn of 30 messages."""
    rid = 10 + n
    yield (
        C2A,
        _req(
            rid,
            "session/prompt",
            {"sessionId": "s1", "prompt": [{"type": "text", "text": f"task {n}"}]},
        ),
    )
    for i in range(12):
        yield (
            A2C,
            _upd(
                {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": f"word {i} "},
                }
            ),
        )
    tc, path = f"call_{n}", f"{CWD}/src/f{n % 50}.py"
    yield (
        A2C,
        _upd(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": tc,
                "title": "Run tests",
                "kind": "execute",
                "status": "pending",
                "locations": [{"path": path}],
            }
        ),
    )
    yield (
        A2C,
        _req(
            f"p{n}",
            "session/request_permission",
            {
                "sessionId": "s1",
                "toolCall": {"toolCallId": tc},
                "options": [
                    {"optionId": "y", "name": "Yes", "kind": "allow_once"},
                    {"optionId": "n", "name": "No", "kind": "reject_once"},
                ],
            },
        ),
    )
    yield C2A, _res(f"p{n}", {"outcome": {"outcome": "selected", "optionId": "y"}})
    yield A2C, _req(f"r{n}", "fs/read_text_file", {"sessionId": "s1", "path": path})
    yield C2A, _res(f"r{n}", {"content": "print('hi')\n" * 5})
    yield (
        A2C,
        _req(
            f"c{n}",
            "terminal/create",
            {"sessionId": "s1", "command": "pytest", "args": ["-q"], "cwd": CWD},
        ),
    )
    yield C2A, _res(f"c{n}", {"terminalId": f"t{n}"})
    yield (
        A2C,
        _upd(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": tc,
                "status": "in_progress",
                "content": [{"type": "terminal", "terminalId": f"t{n}"}],
            }
        ),
    )
    yield A2C, _req(f"o{n}", "terminal/output", {"sessionId": "s1", "terminalId": f"t{n}"})
    yield (
        C2A,
        _res(f"o{n}", {"output": "3 passed\n", "truncated": False, "exitStatus": {"exitCode": 0}}),
    )
    yield A2C, _req(f"l{n}", "terminal/release", {"sessionId": "s1", "terminalId": f"t{n}"})
    yield C2A, _res(f"l{n}", {})
    yield (
        A2C,
        _upd(
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": tc,
                "status": "completed",
                "content": [{"type": "diff", "path": path, "oldText": "a", "newText": "b"}],
            }
        ),
    )
    yield (
        A2C,
        _upd(
            {
                "sessionUpdate": "plan",
                "entries": [
                    {"content": "run tests", "priority": "high", "status": "completed"},
                    {"content": "fix", "priority": "medium", "status": "pending"},
                ],
            }
        ),
    )
    yield A2C, _res(rid, {"stopReason": "end_turn"})


def _v2_head() -> Iterator[Message]:
    yield (
        C2A,
        _req(
            0,
            "initialize",
            {"protocolVersion": 2, "info": {"name": "b", "version": "1"}, "capabilities": {}},
        ),
    )
    yield (
        A2C,
        _res(
            0,
            {
                "protocolVersion": 2,
                "info": {"name": "b", "version": "1"},
                "capabilities": {"session": {}},
            },
        ),
    )
    yield C2A, _req(1, "session/new", {"cwd": CWD})
    yield A2C, _res(1, {"sessionId": "v2"})


def build(total: int, version: int) -> list[Frame]:
    frames: list[Frame] = []
    t = 0
    head = _v1_head() if version == 1 else _v2_head()
    turn = _v1_turn if version == 1 else _v2_turn
    n = 0

    def add(d: Direction, m: dict[str, object]) -> None:
        nonlocal t
        t += 50_000
        frames.append(Frame(len(frames), d, t, bytes(memoryview(orjson.dumps(m)))))

    for d, m in head:
        add(d, m)
    while len(frames) < total:
        for d, m in turn(n):
            add(d, m)
        n += 1
    return frames  # whole turns: nothing is left unanswered


def check(pairs: object) -> Checker:
    checker = Checker()
    for frame, flags in pairs:  # type: ignore[attr-defined]
        checker.feed(frame, flags)
    checker.finish()
    return checker


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=1_000_000)
    args = ap.parse_args()
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs")
    total_frames = 0
    total_time = total_cpu = 0.0
    for version in (1, 2):
        frames = build(args.frames // 2, version)
        size = sum(len(f.raw) for f in frames)
        gc.collect()
        start, cpu = time.perf_counter(), time.process_time()
        checker = check((f, ()) for f in frames)
        took, cpu = time.perf_counter() - start, time.process_time() - cpu
        total_frames += len(frames)
        total_time += took
        total_cpu += cpu
        bad = [f for f in checker.findings if f.severity != "info"]
        print(
            f"  v{version}: {len(frames):,} frames ({size / 1e6:.0f} MB) checked in "
            f"{took:.2f} s → {len(frames) / took:,.0f} frames/s "
            f"(CPU {cpu:.2f} s → {len(frames) / cpu:,.0f} frames/s); findings: {len(bad)}"
        )
        assert checker.version == version and not bad, bad[:3]
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "capture.jsonl"
            with open(path, "wb") as out:
                for fr in frames:
                    out.write(
                        orjson.dumps(
                            {
                                "capture": "bench",
                                "seq": fr.seq,
                                "direction": fr.direction.value,
                                "t_ns": fr.t_ns,
                                "text": fr.raw.decode(),
                                "anomalies": [],
                            }
                        )
                        + b"\n"
                    )
            start, cpu = time.perf_counter(), time.process_time()
            for cap in from_jsonl(path):
                check(cap.frames)
            took, cpu = time.perf_counter() - start, time.process_time() - cpu
            print(
                f"      from a jsonl export on disk: {took:.2f} s (CPU {cpu:.2f} s) → "
                f"{len(frames) / took:,.0f} frames/s"
            )
    print(
        f"  total: {total_frames:,} frames in {total_time:.2f} s, CPU {total_cpu:.2f} s "
        "(checker alone)"
    )


if __name__ == "__main__":
    main()

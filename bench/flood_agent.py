"""Synthetic ACP agents for the stdio benchmark (``bench/bench_stdio.py``).

Two modes, both standard-library only so their own cost stays out of the figures:

``flood``
    Writes ``--count`` JSON-RPC ``session/update`` notifications of exactly ``--size`` bytes
    each (the ``\\n`` included) to stdout as fast as it can: the frames are built once, joined
    into blocks of about ``--block`` bytes, and written with large ``os.write`` calls. With
    ``--wait-init`` it first reads one line (an ``initialize`` request) from stdin and answers
    it before flooding.

``echo``
    A ping agent for round-trip latency: reads one request line at a time from stdin and
    answers ``{"jsonrpc":"2.0","id":<same id>,"result":{}}`` immediately. The id is copied as
    its exact bytes, so no JSON parsing happens on the agent side.

Usage::

    python bench/flood_agent.py flood --count 100000 --size 200
    python bench/flood_agent.py echo
"""

from __future__ import annotations

import argparse
import json
import os
import sys

SESSION = "sess_bench_0001"


def notification(size: int, index: int = 0) -> bytes:
    """A compact ``session/update`` line of exactly ``size`` bytes, ``\\n`` included."""
    head = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": SESSION,
            "update": {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": ""},
            },
        },
    }
    empty = json.dumps(head, separators=(",", ":")).encode() + b"\n"
    pad = size - len(empty)
    if pad < 0:
        raise SystemExit(f"--size must be at least {len(empty)} bytes")
    stamp = f"{index:08d} " if pad >= 9 else ""
    text = (stamp + "lorem ipsum dolor sit amet " * (pad // 27 + 1))[:pad]
    head["params"]["update"]["content"]["text"] = text  # type: ignore[index]
    line = json.dumps(head, separators=(",", ":")).encode() + b"\n"
    assert len(line) == size, (len(line), size)
    return line


def write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def read_line(fd: int, buf: bytearray) -> bytes | None:
    """One line from ``fd`` (without ``\\n``), buffering the rest in ``buf``."""
    while True:
        nl = buf.find(b"\n")
        if nl >= 0:
            line = bytes(buf[:nl])
            del buf[: nl + 1]
            return line
        data = os.read(fd, 65536)
        if not data:
            return None
        buf += data


def flood(count: int, size: int, block: int, wait_init: bool) -> None:
    out = sys.stdout.fileno()
    if wait_init:
        buf = bytearray()
        line = read_line(sys.stdin.fileno(), buf)
        if line is not None:
            req_id = json.loads(line).get("id", 0)
            reply = {
                "jsonrpc": "2.0",
                "id": req_id,
                "result": {
                    "protocolVersion": 1,
                    "agentCapabilities": {},
                    "agentInfo": {"name": "flood-agent", "version": "0"},
                },
            }
            write_all(out, json.dumps(reply, separators=(",", ":")).encode() + b"\n")
    # a few distinct frames so a block is not one repeated line
    distinct = [notification(size, i) for i in range(16)]
    per_block = max(1, block // size)
    unit = b"".join(distinct[i % 16] for i in range(per_block))
    full, rest = divmod(count, per_block)
    for _ in range(full):
        write_all(out, unit)
    if rest:
        write_all(out, unit[: rest * size])


def echo() -> None:
    """Answer each request line at once; exit at EOF."""
    fd_in, fd_out = sys.stdin.fileno(), sys.stdout.fileno()
    buf = bytearray()
    head, tail = b'{"jsonrpc":"2.0","id":', b',"result":{}}\n'
    while True:
        line = read_line(fd_in, buf)
        if line is None:
            return
        # the id follows '"id":' and ends at the next ',' or '}' (bench requests use ints)
        at = line.find(b'"id":')
        if at < 0:
            continue
        start = at + 5
        end = start
        while end < len(line) and line[end] not in b",}":
            end += 1
        write_all(fd_out, head + line[start:end] + tail)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="mode", required=True)
    f = sub.add_parser("flood", help="write N session/update notifications")
    f.add_argument("--count", type=int, default=100_000)
    f.add_argument("--size", type=int, default=200, help="bytes per frame, newline included")
    f.add_argument("--block", type=int, default=1 << 20, help="bytes per os.write")
    f.add_argument("--wait-init", action="store_true", help="answer one request line first")
    sub.add_parser("echo", help="answer each request line immediately")
    a = p.parse_args(argv)
    try:
        if a.mode == "flood":
            flood(a.count, a.size, a.block, a.wait_init)
        else:
            echo()
    except BrokenPipeError:
        os._exit(1)


if __name__ == "__main__":
    main()

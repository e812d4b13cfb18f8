"""``python -m acp_proxy.record.child DB``: the recorder's SQLite process (layer 2).

What belongs here: the loop that reads batches from the parent recorder on stdin (an 8-byte
little-endian length, then a pickled :class:`~acp_proxy.record.sink.Batch`; pickle is safe
here because the only writer of that pipe is our own parent) and hands them to a
:class:`~acp_proxy.record.sink.SqliteSink`. It ends when stdin closes — also when the parent
was killed, so whatever reached the pipe still reaches the database. Interrupts are ignored: the child
is in its own session and is never cut short between two batches.
"""

from __future__ import annotations

import gc
import pickle
import signal
import sys
from pathlib import Path

from acp_proxy.record.sink import Batch, SqliteSink

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m acp_proxy.record.child DB", file=sys.stderr)
        return 2
    for s in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(s, signal.SIG_IGN)
    sink = SqliteSink(Path(args[0]))
    # Batches are millions of short-lived tuples and no cycles: collecting the young
    # generation every 700 allocations is pure overhead here.
    gc.freeze()
    gc.set_threshold(50_000, 50, 50)
    stdin = sys.stdin.buffer
    try:
        while True:
            header = stdin.read(8)
            if len(header) < 8:
                break
            payload = stdin.read(int.from_bytes(header, "little"))
            batch = pickle.loads(payload)
            if isinstance(batch, Batch):
                sink.write(batch)
    finally:
        sink.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

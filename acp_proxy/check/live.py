"""``python -m acp_proxy.check.live DB PROXY_PID``: findings on stderr while recording,
for ``acp-proxy record --check``.

What belongs here: a process of its own that follows, in the database, the capture the
relay ``PROXY_PID`` is recording, runs the checker over each frame as it is stored and
prints what it finds on stderr (shared with the relay). It never touches the relay: the
bytes are forwarded and recorded exactly as without it, and it sees frames only once the
recorder has committed them. It ends when the capture ends, or soon after the relay is gone,
with what only the end of a capture shows (requests never answered...).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import sys
import time
from pathlib import Path

from acp_proxy.check.core.checker import Checker
from acp_proxy.check.core.findings import Finding
from acp_proxy.errors import ProxyError
from acp_proxy.events.ending import CaptureEnd, capture_ending
from acp_proxy.store.liveness import alive, identity
from acp_proxy.store.reader import Store
from acp_proxy.text.safe import visible

__all__ = ["line", "main"]

_POLL_S = 0.2
_AFTER_RELAY_S = 1.0  # how long to wait for the recorder once the relay is gone
_START_S = 30.0  # how long to wait for the capture to appear


def line(f: Finding) -> str:
    where = f"seq {f.seq}" if f.seq is not None else "capture"
    excerpt = f": {f.excerpt[:80]}" if f.excerpt else ""
    return visible(
        f"acp-proxy: check: {f.severity} {f.rule} {where} [{f.side}] {f.message}{excerpt}"
    )


def _say(f: Finding) -> None:
    with contextlib.suppress(OSError):
        sys.stderr.write(line(f) + "\n")
        sys.stderr.flush()


def follow(db: Path, proxy_pid: int) -> int:
    start = time.monotonic()
    ident = identity(proxy_pid)  # with the pid, this relay and no earlier one of that pid

    def _alive(pid: int) -> bool:
        return alive(pid, ident) if ident is not None else _exists(pid)

    store: Store | None = None
    capture_id: int | None = None
    while capture_id is None:
        if time.monotonic() - start > _START_S or not _alive(proxy_pid):
            return 0
        with contextlib.suppress(ProxyError, sqlite3.Error):
            store = store or Store(db)
            row = store.conn.execute(
                "SELECT id FROM captures WHERE proxy_pid = ? AND proxy_start IS ? "
                "ORDER BY id DESC LIMIT 1",
                [proxy_pid, ident],
            ).fetchone()
            capture_id = row[0] if row else None
        if capture_id is None:
            time.sleep(_POLL_S)
    assert store is not None
    checker = Checker()
    last = -1
    gone_at: float | None = None
    while True:
        try:
            frames = list(store.frames(capture_id, after_seq=last, limit=5000))
            ended = store.conn.execute(
                "SELECT ended_at FROM captures WHERE id = ?", [capture_id]
            ).fetchone()
        except sqlite3.Error:
            frames, ended = [], None
        for f in frames:
            for finding in checker.feed(f.frame, f.anomalies):
                _say(finding)
            last = f.seq
        if frames:
            continue
        if ended is not None and ended[0] is not None:
            break
        if gone_at is None and not _alive(proxy_pid):
            gone_at = time.monotonic()
        if gone_at is not None and time.monotonic() - gone_at > _AFTER_RELAY_S:
            break
        time.sleep(_POLL_S)
    for finding in checker.finish(_ending(store, capture_id)):
        _say(finding)
    return 0


def _ending(store: Store | None, capture_id: int | None) -> CaptureEnd | None:
    """Who ended the capture, as far as the database says by now."""
    if store is None or capture_id is None:
        return None
    try:
        c = store.capture(capture_id)
        return capture_ending(c, store.events(capture_id))
    except (ProxyError, sqlite3.Error):
        return None


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or not args[1].isdigit():
        print("usage: python -m acp_proxy.check.live DB PROXY_PID", file=sys.stderr)
        return 2
    for s in (signal.SIGINT, signal.SIGHUP):
        signal.signal(s, signal.SIG_IGN)  # the editor's ^C is for the relay; we end with it
    return follow(Path(args[0]), int(args[1]))


if __name__ == "__main__":
    raise SystemExit(main())

"""Fault drills: kill the relay or its recorder, fill the disk, lock the database.

Each drill counts what was sent, what reached the other side (forwarded), what is in the
database (stored) and what is written down as lost, and checks that forwarded ⊆ stored, or
that the difference is written down, exactly.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.proc import PROXY, db_rows, peer, recorder_processes, run_proxy, wait_recorded

from acp_proxy.protocol.frames import Direction
from acp_proxy.store.reader import Store

pytestmark = pytest.mark.faults

LINE = (
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":'
    b'{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"%08d"}}}}\n'
)


def _flood(db: Path, n: int, **popen: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*PROXY, "record", "--db", str(db), "--grace", "60", "--",
         *peer("lifecycle_agent.py", "flood", str(n))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **popen,  # type: ignore[arg-type]
    )  # fmt: skip


def _read(proc: subprocess.Popen[bytes], at_least: int) -> bytes:
    assert proc.stdout is not None
    got = bytearray()
    while len(got) < at_least:
        chunk = proc.stdout.read1(1 << 16)  # type: ignore[attr-defined]
        assert chunk
        got += chunk
    return bytes(got)


def _stored(db: Path, ref: str | None = None) -> tuple[dict[str, object], bytes]:
    store = Store(db)
    try:
        c = store.capture(ref)
        return c, store.stream_bytes(c["id"], Direction.AGENT_TO_CLIENT)
    finally:
        store.close()


def _gaps(db: Path) -> list[dict[str, object]]:
    return [json.loads(d) for (d,) in db_rows(db, "SELECT detail FROM events WHERE kind='gap'")]


def test_sigkill_of_the_relay_loses_nothing_it_forwarded(db: Path) -> None:
    proc = _flood(db, 400_000)
    forwarded = _read(proc, 8 << 20)
    proc.kill()  # SIGKILL, in the middle of the flood
    assert proc.stdout is not None
    forwarded += proc.stdout.read()  # what it wrote before it died
    proc.wait()
    wait_recorded(db)
    c, stored = _stored(db)
    assert stored.startswith(forwarded)  # every forwarded byte is in the database
    assert c["end_reason"] == "proxy_gone" and c["finished_at"] is not None
    assert c["lost_count"] == 0
    n = forwarded.count(b"\n")
    assert forwarded == b"".join(LINE % i for i in range(n)) + forwarded[len(LINE % 0) * n :]
    status = subprocess.run([*PROXY, "captures", "--db", str(db)], capture_output=True).stdout
    assert b"killed" in status and b"running" not in status


def test_sigkill_of_the_recorder_loses_nothing(db: Path) -> None:
    # the journal holds everything until it is committed: a new recorder carries on
    proc = _flood(db, 300_000)
    forwarded = _read(proc, 4 << 20)
    (child,) = recorder_processes(db)
    os.kill(child, signal.SIGKILL)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.close()  # the agent ends after its flood, once its stdin is closed
    forwarded += proc.stdout.read()
    assert proc.wait(timeout=120) == 0
    assert forwarded == b"".join(LINE % i for i in range(300_000))
    assert b"recorder process ended" in proc.stderr.read()  # type: ignore[union-attr]
    wait_recorded(db)
    c, stored = _stored(db)
    assert stored == forwarded and _gaps(db) == []
    assert c["message_count"] == 300_000 and c["lost_count"] == 0 and c["lost_bytes"] == 0
    assert db_rows(db, "SELECT MIN(seq), MAX(seq), COUNT(*) FROM messages") == [
        (0, 299_999, 300_000)
    ]


def _limit_file_size(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_a_full_disk_loses_frames_but_writes_the_loss_down(tmp_path: Path, db: Path) -> None:
    # the database file (and any spill file) cannot grow past 2 MB: a full disk, for us
    n = 150_000
    proc = _flood(db, n, preexec_fn=lambda: _limit_file_size(2 << 20))
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.close()
    forwarded = proc.stdout.read()
    assert proc.wait(timeout=120) == 0
    assert forwarded == b"".join(LINE % i for i in range(n))  # forwarding never stopped
    wait_recorded(db)
    err = proc.stderr.read().decode()  # type: ignore[union-attr]
    assert "could not be recorded" in err and len(err.splitlines()) <= 6
    # the next recorder to open the database (with room again) writes the loss down
    run_proxy(db, ["true"])
    c, stored = _stored(db, "1")
    total = len(forwarded)
    assert len(stored) + c["lost_bytes"] == total  # type: ignore[operator]
    # a line cut by the loss is stored in part (flagged truncated, or unterminated when the
    # stored part ended a spill file) and counted lost in part; every line here ends in \n
    ((cut,),) = db_rows(
        db,
        "SELECT COUNT(*) FROM messages WHERE anomalies LIKE '%truncated%' "
        "OR anomalies LIKE '%unterminated%'",
    )
    assert c["message_count"] + c["lost_count"] - cut == n  # type: ignore[operator]
    assert c["lost_count"] > 0 and c["message_count"] > 0  # type: ignore[operator]
    assert not list(tmp_path.glob("rec.sqlite.ledger.*"))
    assert not list(tmp_path.glob("rec.sqlite.journal.*"))
    # the proxy and its agent exited 0: that is what the capture says, with its loss
    assert (c["exit_code"], c["end_reason"]) == (0, "closed")
    listing = subprocess.run([*PROXY, "captures", "--db", str(db)], capture_output=True)
    assert b"exit 0, incomplete" in listing.stdout.splitlines()[1]


def test_a_locked_database_holds_up_nothing_and_loses_nothing(tmp_path: Path, db: Path) -> None:
    subprocess.run([*PROXY, "demo", "--db", str(db)], check=True, capture_output=True)
    locker = sqlite3.connect(db, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    source = tmp_path / "out.bin"
    source.write_bytes(b'{"jsonrpc":"2.0","method":"while-locked"}\n' * 50)
    copy = tmp_path / "in.bin"
    result = run_proxy(db, peer("echo_agent.py", str(copy), str(source)), b"{}\n", recorded=False)
    # the session ran to its end while the database was locked
    assert result.returncode == 0 and result.stdout == source.read_bytes()
    assert recorder_processes(db)  # still holding the traffic, waiting for the lock
    time.sleep(0.5)
    locker.execute("ROLLBACK")
    locker.close()
    wait_recorded(db)
    c, stored = _stored(db)
    assert stored == source.read_bytes() and c["message_count"] == 51 and c["exit_code"] == 0
    assert not list(tmp_path.glob("rec.sqlite.journal.*"))


def test_a_database_locked_past_the_end_spills_then_imports(tmp_path: Path, db: Path) -> None:
    subprocess.run([*PROXY, "demo", "--db", str(db)], check=True, capture_output=True)
    locker = sqlite3.connect(db, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    source = tmp_path / "out.bin"
    source.write_bytes(b'{"jsonrpc":"2.0","method":"spilled"}\n' * 50)
    env = {**os.environ, "ACP_PROXY_RECORDER_PATIENCE": "0.5"}
    copy = tmp_path / "in.bin"
    result = run_proxy(db, peer("echo_agent.py", str(copy), str(source)), b"{}\n", env=env)
    assert result.returncode == 0 and result.stdout == source.read_bytes()
    spills = list(tmp_path.glob("rec.sqlite.journal.*.acp"))
    assert len(spills) == 1 and spills[0].stat().st_mode & 0o777 == 0o600
    locker.execute("ROLLBACK")
    locker.close()
    out = subprocess.run([*PROXY, "import-spill", "--db", str(db)], capture_output=True)
    assert out.returncode == 0, out.stderr
    assert not list(tmp_path.glob("rec.sqlite.journal.*"))
    c, stored = _stored(db)
    assert stored == source.read_bytes() and c["message_count"] == 51
    assert c["exit_code"] == 0 and c["end_reason"] == "closed"
    again = subprocess.run([*PROXY, "import-spill", "--db", str(db)], capture_output=True)
    assert b"no spill files" in again.stderr


def test_a_journal_left_under_its_old_name_is_still_brought_in(tmp_path: Path, db: Path) -> None:
    """Journals were named <db>.spill.<journal>.<n>.acp before they were <db>.journal.…:
    one an earlier release left behind is found, read and brought in all the same."""
    subprocess.run([*PROXY, "demo", "--db", str(db)], check=True, capture_output=True)
    locker = sqlite3.connect(db, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    source = tmp_path / "out.bin"
    source.write_bytes(b'{"jsonrpc":"2.0","method":"left-behind"}\n' * 20)
    env = {**os.environ, "ACP_PROXY_RECORDER_PATIENCE": "0.5"}
    copy = tmp_path / "in.bin"
    result = run_proxy(db, peer("echo_agent.py", str(copy), str(source)), b"{}\n", env=env)
    assert result.returncode == 0
    locker.execute("ROLLBACK")
    locker.close()
    left = list(tmp_path.glob("rec.sqlite.journal.*"))
    assert any(f.suffix == ".acp" for f in left)
    for f in left:  # as an earlier release named them
        f.rename(f.with_name(f.name.replace(".journal.", ".spill.", 1)))
    noted = subprocess.run([*PROXY, "captures", "--db", str(db)], capture_output=True)
    assert b"never brought in" in noted.stderr
    out = subprocess.run([*PROXY, "import-spill", "--db", str(db)], capture_output=True)
    assert out.returncode == 0 and b"imported 21 frames" in out.stderr, out.stderr
    assert not list(tmp_path.glob("rec.sqlite.spill.*"))
    c, stored = _stored(db)
    assert stored == source.read_bytes() and c["message_count"] == 21


def test_an_unwritable_database_forwards_and_says_so_once(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where a directory should be")
    db = blocker / "rec.sqlite"
    source = tmp_path / "out.bin"
    source.write_bytes(b'{"jsonrpc":"2.0","method":"x"}\n')
    copy = tmp_path / "in.bin"
    result = run_proxy(db, peer("echo_agent.py", str(copy), str(source)), b'{"a":1}\n')
    assert result.returncode == 0
    assert result.stdout == source.read_bytes()
    assert copy.read_bytes() == b'{"a":1}\n'
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 2 and "NOT recorded" in lines[0] and str(db) in lines[0]
    assert lines[1].startswith(
        "acp-proxy: warning: 2 frames (39 bytes) were forwarded but could not be recorded; "
        f"the loss is noted in {tmp_path / 'runtime' / 'acp-proxy'}/"
    )


def test_a_flood_of_tiny_lines_is_recorded_after_the_relay_is_gone(db: Path) -> None:
    n = 100_000  # not JSON: each classified the slow way, far behind the relay
    agent = ["python3", "-c", f"import sys; sys.stdout.write('x\\n' * {n})"]
    result = run_proxy(db, agent)
    assert result.returncode == 0 and result.stdout == b"x\n" * n
    c, stored = _stored(db)
    assert stored == b"x\n" * n and c["message_count"] == n and c["lost_count"] == 0


def test_what_the_client_sends_after_the_agent_exited_is_recorded_as_undelivered(
    db: Path,
) -> None:
    # the agent reads one line and exits; the client has already sent 4 MB more
    agent = ["python3", "-c", "import sys; sys.stdin.buffer.readline()"]
    first = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}\n'
    rest = b"".join(
        b'{"jsonrpc":"2.0","method":"x","params":{"n":%07d}}\n' % i for i in range(100_000)
    )
    result = run_proxy(db, agent, first + rest)
    assert result.returncode == 0
    assert b"not recorded" not in result.stderr, result.stderr
    store = Store(db)
    try:
        c = store.capture(None)
        sent = store.stream_bytes(c["id"], Direction.CLIENT_TO_AGENT)
        frames = list(store.frames(c["id"]))
    finally:
        store.close()
    assert (first + rest).startswith(sent) and sent.startswith(first)
    assert len(sent) > len(first)  # the proxy read more than the agent took: it is kept
    assert any("undelivered" in f.anomalies for f in frames)
    assert "undelivered" not in frames[0].anomalies
    kinds = [k for (k,) in db_rows(db, "SELECT kind FROM events ORDER BY id")]
    assert "agent_stdin_closed" in kinds or "client_not_read" in kinds


def test_a_capture_records_its_journal_so_a_later_recorder_finds_it(db: Path) -> None:
    # a recorder that takes over a journal (its predecessor killed, or an import) finds the
    # captures that journal opened by (journal, number); both were left empty before
    result = run_proxy(db, ["true"])
    assert result.returncode == 0
    ((journal, number),) = db_rows(db, "SELECT journal, journal_number FROM captures")
    assert isinstance(journal, str) and len(journal) == 16 and number == 1


_CUT_THEN_ROOM = r"""
import glob, resource, sys
from pathlib import Path
from acp_proxy.record.journal import JournalWriter
from acp_proxy.record.core.wire import HEADER, Stream, Type
db = Path(sys.argv[1])
w = JournalWriter(db, "0123456789abcdef", warn=lambda m: None)
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
first, second = b"a" * 3000, b"b" * 500
resource.setrlimit(resource.RLIMIT_FSIZE, (1000, hard))  # the disk fills mid-record
w.write(HEADER.pack(len(first), Type.CHUNK, Stream.A2C, 0, 1, 1, 0, 0), first)
(segment,) = glob.glob(f"{db}.journal.*.acp")
cut = Path(segment).stat().st_size
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))  # room again
w.write(HEADER.pack(len(second), Type.CHUNK, Stream.A2C, 0, 1, 2, 3000, 0), second)
print(cut, segment)
"""


def test_a_record_cut_by_a_full_disk_is_finished_later_never_cut_back(db: Path) -> None:
    # a recorder following the journal may already have read the first bytes of the cut
    # record: they must stay as written, and the record be completed once there is room
    from acp_proxy.record.core.wire import RecordReader, Type

    out = subprocess.run(
        [sys.executable, "-c", _CUT_THEN_ROOM, str(db)], capture_output=True, check=True
    ).stdout.split()
    cut, segment = int(out[0]), Path(out[1].decode())
    assert 0 < cut <= 1000  # part of the first record reached the file, and stayed
    records = RecordReader().feed(Path(segment).read_bytes())
    assert [(r.rseq, r.payload) for r in records if r.type == Type.CHUNK] == [
        (1, b"a" * 3000),
        (2, b"b" * 500),
    ]

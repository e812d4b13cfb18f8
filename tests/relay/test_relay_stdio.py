"""The stdio relay with real processes: bytes in both directions, and the lifecycle."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from support.proc import PROXY, db_rows, peer, run_proxy, wait_recorded

from acp_proxy.protocol.frames import Direction
from acp_proxy.store.reader import Store

HOSTILE = b"".join(
    [
        b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n',
        b'{"jsonrpc":"2.0","id":1,"result":{}}\r\n',  # CRLF
        b"\n",  # empty line
        b"   \t \n",  # whitespace only
        b'\x1b[32mnoise\x1b[0m{"jsonrpc":"2.0","method":"a"}\n',  # ANSI before JSON
        b'\xef\xbb\xbf{"jsonrpc":"2.0","method":"bom"}\n',  # a BOM
        b'[{"jsonrpc":"2.0","id":2,"method":"b"},{"jsonrpc":"2.0","method":"c"}]\n',  # batch
        b'{"jsonrpc":"2.0","id":"1","method":"s"}\n',  # string id "1"
        b'{"jsonrpc":"2.0","id":1,"method":"n"}\n',  # numeric id 1
        b'{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"big"}\n',
        b'{"jsonrpc":"2.0","id":3,"id":4,"method":"dup"}\n',  # duplicate keys
        b'{"jsonrpc":"2.0","method":"nan","params":{"x":NaN}}\n',
        b'{"jsonrpc":"2.0","method":"sur","params":{"x":"\\ud800"}}\n',  # lone surrogate
        b"\xff\xfe\xfd invalid utf-8 \xc3\x28\n",
        b"[" * 10_000 + b"]" * 10_000 + b"\n",  # 10 000-deep nesting
        b"not json at all\n",
        b'{"jsonrpc":"2.0","method":"final","params":{"no":"newline"}}',  # no final \n
    ]
)


def _roundtrip(
    tmp_path: Path, db: Path, client_bytes: bytes, agent_bytes: bytes, sizes: str = ""
) -> None:
    source = tmp_path / "agent_out.bin"
    source.write_bytes(agent_bytes)
    copy = tmp_path / "agent_in.bin"
    result = run_proxy(db, peer("echo_agent.py", str(copy), str(source), sizes), client_bytes)
    assert result.returncode == 0, result.stderr
    assert result.stdout == agent_bytes  # what the client got
    assert copy.read_bytes() == client_bytes  # what the agent got
    store = Store(db)
    capture = store.capture(None)
    assert store.stream_bytes(capture["id"], Direction.CLIENT_TO_AGENT) == client_bytes
    assert store.stream_bytes(capture["id"], Direction.AGENT_TO_CLIENT) == agent_bytes
    seqs = [s for (s,) in db_rows(db, "SELECT seq FROM messages ORDER BY seq")]
    assert seqs == list(range(len(seqs)))  # gap-free
    assert capture["message_count"] == len(seqs)
    store.close()


def test_hostile_bytes_both_ways_identical_everywhere(tmp_path: Path, db: Path) -> None:
    _roundtrip(tmp_path, db, HOSTILE, HOSTILE[::-1] + HOSTILE)


@pytest.mark.parametrize("sizes", ["1", "2,3,5,7", "13,1,1,64", "4096,1"])
def test_frames_split_across_reads(tmp_path: Path, db: Path, sizes: str) -> None:
    # the agent writes its stdout in pieces that cut UTF-8, CRLF, the BOM and JSON apart
    agent_bytes = HOSTILE[:600] + "é✔😀\r\n".encode() + b'\xef\xbb\xbf{"a":1}\r\n' * 3
    _roundtrip(tmp_path, db, HOSTILE[:300], agent_bytes, sizes)


def test_twenty_megabyte_line(tmp_path: Path, db: Path) -> None:
    big = b'{"jsonrpc":"2.0","method":"big","params":{"blob":"' + b"x" * (20 << 20) + b'"}}\n'
    _roundtrip(tmp_path, db, big + b'{"after":1}\n', b'{"before":1}\n' + big)
    (raw,) = db_rows(db, "SELECT size FROM messages WHERE method = 'big' AND direction='a2c'")
    assert raw[0] == len(big) - 1


def test_nothing_but_agent_bytes_on_stdout_and_stderr_passed_through(
    tmp_path: Path, db: Path
) -> None:
    result = run_proxy(db, peer("lifecycle_agent.py", "stderr"))
    assert result.returncode == 0
    assert result.stdout == b'{"jsonrpc": "2.0", "method": "done"}\n'
    assert result.stderr == b"log line one\n\xff\xfe not utf-8\npartial"
    recorded = b"".join(bytes(d) for (d,) in db_rows(db, "SELECT data FROM stderr ORDER BY id"))
    assert recorded == b"log line one\n\xff\xfe not utf-8\npartial"


def test_derived_fields_of_hostile_frames(tmp_path: Path, db: Path) -> None:
    _roundtrip(tmp_path, db, HOSTILE, b"")
    rows = db_rows(db, "SELECT method, msg_id, kind, anomalies FROM messages ORDER BY seq")
    by_method = {r[0]: r for r in rows if r[0]}
    assert by_method["s"][1] == '"1"' and by_method["n"][1] == "1"
    assert by_method["big"][1] == "123456789012345678901234567890"
    assert "big_int" in by_method["big"][3]
    assert "duplicate_keys" in by_method["dup"][3]
    assert "nan" in by_method["nan"][3]
    assert "lone_surrogate" in by_method["sur"][3]
    assert "leading_noise" in by_method["a"][3]
    assert "bom" in by_method["bom"][3]
    assert "unterminated" in by_method["final"][3]
    kinds = [r[2] for r in rows]
    assert kinds.count("batch") == 1
    anomalies = ",".join(r[3] or "" for r in rows)
    for flag in ("crlf", "empty", "invalid_utf8", "too_deep", "not_json"):
        assert flag in anomalies
    items = db_rows(db, "SELECT idx, kind, method, msg_id FROM batch_items ORDER BY idx")
    assert items == [(0, "request", "b", "2"), (1, "notification", "c", None)]


# -- lifecycle -------------------------------------------------------------------------


def test_agent_exit_code_becomes_ours_and_partial_line_is_kept(db: Path) -> None:
    result = run_proxy(db, peer("lifecycle_agent.py", "crash", "7"))
    assert result.returncode == 7
    assert result.stdout.endswith(b'{"jsonrpc":"2.0","meth')
    ((exit_code, signal_no),) = db_rows(db, "SELECT exit_code, exit_signal FROM captures")
    assert (exit_code, signal_no) == (7, None)
    ((anomalies,),) = db_rows(db, "SELECT anomalies FROM messages WHERE seq = 1")
    assert "unterminated" in anomalies


def test_agent_killed_by_signal_exits_128_plus_n(db: Path) -> None:
    result = run_proxy(db, peer("lifecycle_agent.py", "kill", "SIGKILL"))
    assert result.returncode == 128 + signal.SIGKILL
    ((exit_code, signal_no),) = db_rows(db, "SELECT exit_code, exit_signal FROM captures")
    assert (exit_code, signal_no) == (128 + 9, 9)


def test_client_eof_then_grace_then_terminate(db: Path) -> None:
    proc = subprocess.Popen(
        [
            *PROXY,
            "record",
            "--db",
            str(db),
            "--grace",
            "0.3",
            "--",
            *peer("lifecycle_agent.py", "ignore-eof"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stdin is not None
    assert b"ready" in proc.stdout.readline()
    proc.stdin.close()
    assert proc.wait(timeout=20) == 128 + signal.SIGTERM
    kinds = [k for (k,) in db_rows(db, "SELECT kind FROM events ORDER BY id")]
    assert kinds.index("client_eof") < kinds.index("terminate") < kinds.index("exit")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGHUP, signal.SIGTERM])
def test_signals_reach_the_agent(db: Path, sig: signal.Signals) -> None:
    proc = subprocess.Popen(
        [*PROXY, "record", "--db", str(db), "--", *peer("lifecycle_agent.py", "trap")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    assert b"ready" in proc.stdout.readline()
    proc.send_signal(sig)
    assert json.loads(proc.stdout.readline())["params"]["name"] == sig.name
    if sig != signal.SIGTERM:
        proc.send_signal(signal.SIGTERM)
        proc.stdout.readline()
    assert proc.wait(timeout=20) == 0
    details = [
        json.loads(d) for (d,) in db_rows(db, "SELECT detail FROM events WHERE kind = 'signal'")
    ]
    assert details[0]["signal"] == sig.name


def test_missing_and_non_executable_agent(db: Path, tmp_path: Path) -> None:
    missing = run_proxy(db, ["no-such-agent-binary", "--flag"], b"{}\n")
    assert missing.returncode == 127
    assert missing.stdout == b""
    assert missing.stderr.decode().strip().splitlines() == [
        "acp-proxy: error: agent command not found: no-such-agent-binary"
    ]
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)
    denied = run_proxy(db, [str(script)])
    assert denied.returncode == 126
    assert len(denied.stderr.decode().strip().splitlines()) == 1
    rows = db_rows(db, "SELECT exit_code FROM captures ORDER BY id")
    assert rows == [(127,), (126,)]


def test_concurrent_recorders_into_one_database(db: Path) -> None:
    n = 20_000
    procs = [
        subprocess.Popen(
            [
                *PROXY,
                "record",
                "--db",
                str(db),
                "--grace",  # stdin is /dev/null: do not cut the flood short on a busy machine
                "120",
                "--label",
                f"r{i}",
                "--",
                *peer("lifecycle_agent.py", "flood", str(n)),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i in range(4)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, [o[1] for o in outs]
    wait_recorded(db)
    rows = db_rows(db, "SELECT label, message_count FROM captures ORDER BY label")
    assert rows == [(f"r{i}", n) for i in range(4)]
    store = Store(db)
    for c in store.captures():
        assert (
            store.stream_bytes(c["id"], Direction.AGENT_TO_CLIENT) == outs[int(c["label"][1:])][0]
        )
    store.close()


def test_database_file_is_private(db: Path) -> None:
    run_proxy(db, peer("lifecycle_agent.py", "stderr"))
    assert db.stat().st_mode & 0o777 == 0o600


def test_database_and_its_wal_files_are_private_while_recording(db: Path) -> None:
    proc = subprocess.Popen(
        [*PROXY, "record", "--db", str(db), "--", *peer("lifecycle_agent.py", "trap")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None
    assert b"ready" in proc.stdout.readline()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:  # (connecting before the file exists would create it ourselves)
            if db.exists() and db_rows(db, "SELECT 1 FROM messages"):
                break
        except sqlite3.OperationalError:  # the recorder has not made the schema yet
            pass
        time.sleep(0.05)
    files = [db, Path(f"{db}-wal"), Path(f"{db}-shm")]
    assert all(f.exists() for f in files)  # WAL mode, written while the agent runs
    assert [f.stat().st_mode & 0o777 for f in files] == [0o600] * 3
    proc.terminate()
    proc.wait(timeout=20)


def test_bytes_are_forwarded_without_waiting_for_the_newline(db: Path) -> None:
    proc = subprocess.Popen(
        [*PROXY, "record", "--db", str(db), "--", *peer("lifecycle_agent.py", "partial")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stdin is not None
    # the agent holds the rest of its line until we answer: the half must reach us first
    assert proc.stdout.read1(4096) == b'{"jsonrpc":"2.0","method":"half'  # type: ignore[attr-defined]
    proc.stdin.write(b"go\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == b'-and-rest"}\n'
    proc.stdin.close()
    assert proc.wait(timeout=20) == 0
    (raw,) = db_rows(db, "SELECT raw FROM messages WHERE direction = 'a2c'")
    assert raw[0] == b'{"jsonrpc":"2.0","method":"half-and-rest"}'  # recorded as one frame

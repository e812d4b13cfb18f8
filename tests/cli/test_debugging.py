"""What a debugging session needs from the text commands: the agent's stderr in the
timeline, search and ranges, captures announced live, unanswered requests flagged, and
deleting captures. Real recordings of real processes, real SQLite files."""

from __future__ import annotations

import json
import os
import select
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest
from support.crash import record_crash
from support.hostile import record_script
from support.proc import PROXY, db_rows, peer, run_proxy, wait_recorded


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([*PROXY, *args], capture_output=True, text=True, timeout=120)
    if check:
        assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def crash_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("crash") / "rec.sqlite"
    record_crash(db)
    return db


# -- 16: the agent's stderr in the timeline ---------------------------------------------


def test_show_puts_the_agent_stderr_in_the_timeline_at_its_time(crash_db: Path) -> None:
    out = cli("show", "--db", str(crash_db)).stdout.splitlines()
    starting = next(i for i, line in enumerate(out) if "agent starting" in line)
    boom = next(i for i, line in enumerate(out) if "RuntimeError: boom" in line)
    chunk = next(i for i, line in enumerate(out) if "agent_message_chunk" in line)
    first_response = next(i for i, line in enumerate(out) if "response" in line)
    exit_event = next(i for i, line in enumerate(out) if "· exit" in line)
    assert starting < first_response  # written before the agent answered initialize
    assert chunk < boom < exit_event
    assert "· stderr" in out[boom]
    # the stderr column is where events are, after the seq column
    assert out[boom].index("·") == out[exit_event].index("·")
    assert "agent starting" not in cli("show", "--db", str(crash_db), "--no-stderr").stdout
    # a frame filter leaves stderr out unless it is asked for
    assert "boom" not in cli("show", "--db", str(crash_db), "--kind", "request").stdout
    assert "boom" in cli("show", "--db", str(crash_db), "--kind", "request", "--stderr").stdout


def test_show_json_has_stderr_and_events(crash_db: Path) -> None:
    doc = json.loads(cli("show", "--db", str(crash_db), "--json").stdout)
    assert [f["seq"] for f in doc["frames"]] == list(range(len(doc["frames"])))
    text = "".join(s["text"] for s in doc["stderr"])
    assert "RuntimeError: boom" in text and all("t_ns" in s for s in doc["stderr"])
    assert "exit" in [e["kind"] for e in doc["events"]]


def test_turns_view_shows_the_stderr_of_the_turn_and_why_it_was_cut_short(
    crash_db: Path,
) -> None:
    out = cli("show", "--db", str(crash_db), "--view", "turns").stdout
    assert "turn 1  #4  s1  cut short: agent exited 3 before answering" in out
    assert "stderr  RuntimeError: boom" in out
    turns = json.loads(cli("show", "--db", str(crash_db), "--view", "turns", "--json").stdout)
    assert turns[0]["cutShort"] == "agent exited 3"


# -- 20: unanswered requests --------------------------------------------------------------


def test_a_request_unanswered_when_the_capture_ended_is_an_anomaly(crash_db: Path) -> None:
    out = cli("show", "--db", str(crash_db)).stdout.splitlines()
    prompt = next(line for line in out if "request" in line and "session/prompt" in line)
    assert prompt.endswith("!unanswered")
    assert not any("unanswered" in line for line in out if "initialize" in line)
    assert out[-1].strip().startswith("1 request(s) never answered (agent exited 3 first)")
    only = cli("show", "--db", str(crash_db), "--anomalous").stdout
    assert "session/prompt" in only and "initialize" not in only
    doc = json.loads(cli("show", "--db", str(crash_db), "--json").stdout)
    flagged = [f["seq"] for f in doc["frames"] if "unanswered" in f["anomalies"]]
    assert flagged == [4]


def test_a_capture_still_recording_has_no_unanswered_requests(db: Path) -> None:
    # the same rule, asked while the request may still be answered: nothing is flagged
    from acp_proxy.store.reader import Store

    record_crash(db)
    store = Store(db)
    assert [f.seq for f in store.frames(1, ended=True) if "unanswered" in f.anomalies] == [4]
    assert not any("unanswered" in f.anomalies for f in store.frames(1))


# -- 17: search and ranges ---------------------------------------------------------------


def test_grep_from_and_since(crash_db: Path) -> None:
    body = [
        line
        for line in cli(
            "show", "--db", str(crash_db), "--grep", "session/(new|prompt)"
        ).stdout.splitlines()[3:]
    ]
    # the payload's text: the response to session/new does not name its method
    assert [line.split()[1] for line in body if "ms #" in line] == ["#2", "#4"]
    # smart case: lower case matches any case; a capital letter makes it exact
    assert "RuntimeError" in cli("show", "--db", str(crash_db), "--grep", "runtimeerror").stdout
    assert "RuntimeError" not in cli("show", "--db", str(crash_db), "--grep", "RUNTIMEERROR").stdout
    out = cli("show", "--db", str(crash_db), "--from", "3", "--at", "4").stdout
    assert [line.split()[1] for line in out.splitlines() if "ms #" in line] == ["#3", "#4"]
    doc = json.loads(cli("show", "--db", str(crash_db), "--json").stdout)
    t4 = doc["frames"][4]["t_ns"]
    since = cli("show", "--db", str(crash_db), "--since", f"{t4 / 1e6}ms").stdout
    assert "#4 " in since and "#3 " not in since and "boom" in since
    bad = cli("show", "--db", str(crash_db), "--grep", "(", check=False)
    assert bad.returncode == 2 and "not a regular expression" in bad.stderr
    assert "Traceback" not in bad.stderr
    bad = cli("show", "--db", str(crash_db), "--since", "yesterday-ish", check=False)
    assert bad.returncode == 2 and "--since wants" in bad.stderr


def test_tail_grep(crash_db: Path) -> None:
    out = cli("tail", "--db", str(crash_db), "-n", "5", "--grep", "sessionId").stdout
    assert [line.split()[2] for line in out.splitlines()] == ["#3", "#4", "#5"]


# -- 18: tail -f announces captures -------------------------------------------------------


def _read_until(proc: subprocess.Popen[bytes], marker: bytes, out: bytes = b"") -> bytes:
    assert proc.stdout is not None
    deadline = time.monotonic() + 60  # a bound on waiting, not a measurement
    while marker not in out and time.monotonic() < deadline and proc.poll() is None:
        if select.select([proc.stdout], [], [], 0.2)[0]:
            out += os.read(proc.stdout.fileno(), 1 << 16)
    return out


def test_tail_follow_announces_captures_starting_and_ending(db: Path) -> None:
    record_script(db, db.parent, [("c2a", {"jsonrpc": "2.0", "method": "before"})])
    tail = subprocess.Popen(
        [*PROXY, "tail", "-f", "-n", "0", "--db", str(db), "--interval", "0.05"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        time.sleep(0.5)
        record_crash(db)
        out = _read_until(tail, b"ended").decode()
        out = _read_until(tail, b"\n", out.encode()).decode()
    finally:
        tail.send_signal(signal.SIGINT)
        _, err = tail.communicate(timeout=30)
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if "capture 2 started" in line)
    boom = next(i for i, line in enumerate(lines) if "RuntimeError: boom" in line)
    end = next(i for i, line in enumerate(lines) if "capture 2 ended" in line)
    assert start < boom < end and "capture 1" not in out
    assert "crash_agent.py" in lines[start] and "pid" in lines[start]
    assert "exit 3" in lines[end] and "crashed" in lines[end]
    assert "agent exited 3 with 1 request(s) unanswered: #4 session/prompt" in lines[end]
    assert tail.returncode == 130 and b"Aborted" not in err


# -- 21: captures shows the label; rm and prune ------------------------------------------


def test_captures_shows_the_label(db: Path) -> None:
    record_crash(db, label="flaky-run")
    out = cli("captures", "--db", str(db)).stdout.splitlines()
    assert "label" in out[0].split()
    assert "flaky-run" in out[1]
    assert out[0].index("label") == out[1].index("flaky-run")


def _capture_rows(db: Path, capture_id: int) -> dict[str, int]:
    conn = sqlite3.connect(db)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        counts = {}
        for t in tables:
            cols = [c[1] for c in conn.execute(f'PRAGMA table_info("{t}")')]
            if "capture_id" in cols:
                counts[t] = conn.execute(
                    f'SELECT COUNT(*) FROM "{t}" WHERE capture_id = ?', [capture_id]
                ).fetchone()[0]
        counts["captures"] = conn.execute(
            "SELECT COUNT(*) FROM captures WHERE id = ?", [capture_id]
        ).fetchone()[0]
        return counts
    finally:
        conn.close()


def test_rm_deletes_a_capture_and_everything_recorded_for_it(db: Path) -> None:
    record_crash(db)
    batch = b'[{"jsonrpc":"2.0","id":7,"method":"x"},{"jsonrpc":"2.0","method":"y"}]\n'
    src = db.parent / "out.txt"
    src.write_bytes(b'[{"jsonrpc":"2.0","id":7,"result":1}]\n')
    run_proxy(db, peer("echo_agent.py", str(db.parent / "copy"), str(src)), batch)
    before = _capture_rows(db, 2)
    assert before["messages"] and before["batch_items"] and before["events"]
    assert _capture_rows(db, 1)["stderr"]
    r = cli("rm", "--db", str(db), "1")
    assert "deleted capture 1" in r.stdout
    assert set(_capture_rows(db, 1).values()) == {0}
    assert _capture_rows(db, 2) == before  # the other capture is untouched
    missing = cli("rm", "--db", str(db), "1", check=False)
    assert missing.returncode == 2 and "no capture" in missing.stderr


def test_prune_older_than_deletes_only_old_captures_and_vacuums(db: Path) -> None:
    record_crash(db)
    record_crash(db)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE captures SET started_at = '2020-01-01T00:00:00.000Z' WHERE id = 1")
    conn.commit()
    conn.close()
    dry = cli("prune", "--db", str(db), "--older-than", "30d", "--dry-run").stdout
    assert "would delete capture 1" in dry and _capture_rows(db, 1)["messages"]
    out = cli("prune", "--db", str(db), "--older-than", "30d", "--vacuum").stdout
    assert "deleted capture 1" in out and "vacuumed" in out
    assert set(_capture_rows(db, 1).values()) == {0}
    assert _capture_rows(db, 2)["messages"] > 0
    bad = cli("prune", "--db", str(db), "--older-than", "soon", check=False)
    assert bad.returncode == 2 and "--older-than wants" in bad.stderr


def test_rm_and_prune_while_a_recorder_writes(db: Path, tmp_path: Path) -> None:
    """The database stays usable: a recording that goes on while captures are deleted
    keeps every frame, and the capture being recorded is left alone."""
    record_crash(db)
    record_crash(db)
    src = tmp_path / "src.txt"
    src.write_bytes(b"")
    proc = subprocess.Popen(
        [
            *PROXY,
            "record",
            "--db",
            str(db),
            "--",
            *peer("echo_agent.py", str(tmp_path / "c"), str(src)),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None
    n = 3000
    done = threading.Event()

    def write() -> None:
        assert proc.stdin is not None
        for i in range(n):
            proc.stdin.write(b'{"jsonrpc":"2.0","method":"tick","params":{"i":%d}}\n' % i)
            if i % 100 == 0:
                proc.stdin.flush()
                time.sleep(0.01)
        proc.stdin.flush()
        done.wait(120)  # the capture stays open until the deleting is over
        proc.stdin.close()

    writer = threading.Thread(target=write)
    writer.start()
    try:
        deadline = time.monotonic() + 60
        while not db_rows(db, "SELECT id FROM captures WHERE id = 3"):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        live = cli("rm", "--db", str(db), "1", "3")
        assert "deleted capture 1" in live.stdout
        assert "capture 3 is still being recorded; left alone" in live.stderr
        pruned = cli("prune", "--db", str(db), "--older-than", "0m")
        assert "deleted capture 2" in pruned.stdout
    finally:
        done.set()
        writer.join()
        proc.wait(60)
    wait_recorded(db)
    assert proc.returncode == 0
    assert db_rows(db, "SELECT COUNT(*) FROM messages WHERE capture_id = 3") == [(n,)]
    assert db_rows(db, "SELECT id FROM captures") == [(3,)]


def test_tail_follow_json_has_stderr_and_the_announcements(db: Path) -> None:
    record_script(db, db.parent, [("c2a", {"jsonrpc": "2.0", "method": "before"})])
    tail = subprocess.Popen(
        [*PROXY, "tail", "-f", "-n", "0", "--json", "--db", str(db), "--interval", "0.05"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        time.sleep(0.5)
        record_crash(db)
        out = _read_until(tail, b'"ended":true').decode()
        out = _read_until(tail, b"\n", out.encode()).decode()
    finally:
        tail.send_signal(signal.SIGINT)
        tail.communicate(timeout=30)
    objs = [json.loads(line) for line in out.splitlines() if line.strip()]
    started = next(o for o in objs if o.get("started"))
    ended = next(o for o in objs if o.get("ended"))
    said = "".join(o["text"] for o in objs if o.get("stderr"))
    assert started["capture_id"] == 2 and "RuntimeError: boom" in said
    assert ended["crashed"] is True and ended["exit_code"] == 3
    assert ended["unanswered"] == [{"seq": 4, "method": "session/prompt"}]
    assert objs.index(started) < objs.index(ended) == len(objs) - 1

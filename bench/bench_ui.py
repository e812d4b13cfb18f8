"""The web inspector and search at scale: a 1 M-frame capture.

Builds a recordings database with one capture of N frames (default 1,000,000: prompts,
streamed chunks of text, tool calls, responses), written straight into the schema with
sqlite3, then measures:

- indexing: how long bringing the search index up to date takes, and the longest write
  transaction it holds (what a recorder may wait for);
- the recorder's insert path: frames per second into ``messages`` on the schema before
  migration 4, with it, and with an FTS trigger instead (the design not taken);
- ``acp-proxy ui`` (a real server process): time to open the capture (its header and first
  timeline page), a page deep in the capture, a filtered page, one frame's detail, search
  latency (a rare word, a common word, a phrase, one capture), and the server's RSS;
- with Playwright and /usr/bin/chromium present, the time until the browser shows the
  capture's first row.

usage: python bench/bench_ui.py [--frames N] [--db PATH [--reindex]] [--keep]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, ClassVar

import orjson

from acp_proxy.store.db import schema_migrations
from acp_proxy.store.index import catch_up, search_path

RARE = "xylophonequartz"


def _words(n: int, rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(n)]


def _schema(conn: sqlite3.Connection, upto: int) -> None:
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL, applied_at TEXT)")
    for number, sql in schema_migrations():
        if number <= upto:
            conn.executescript(sql)
            conn.execute("INSERT INTO schema_version VALUES (?, 'bench')", [number])


def _rows(frames: int, capture_id: int, seed: int = 7) -> list[tuple[object, ...]]:
    """Frames of a long session, in the columns of ``messages`` (after ``id``)."""
    rng = random.Random(seed)
    vocab = _words(5000, rng)
    rows: list[tuple[object, ...]] = []
    sid = "sess_bench"
    t = 0
    seq = 0
    req = 0
    tool = 0

    def add(direction: str, value: dict[str, object], kind: str, method: str | None,
            msg_id: str | None = None, update: str | None = None, tcid: str | None = None,
            request_seq: int | None = None, latency: int | None = None) -> None:  # fmt: skip
        nonlocal seq, t
        raw = orjson.dumps(value)
        t += rng.randint(20_000, 2_000_000)
        rows.append(
            (capture_id, seq, direction, t, raw, 1, None, len(raw), kind, method, msg_id, sid,
             update, tcid, None, None, None, request_seq, latency)
        )  # fmt: skip
        seq += 1

    while seq < frames:
        req += 1
        prompt_seq, prompt_t = seq, t
        words = " ".join(rng.choices(vocab, k=12))
        add("c2a", {"jsonrpc": "2.0", "id": req, "method": "session/prompt",
                    "params": {"sessionId": sid, "prompt": [{"type": "text", "text": words}]}},
            "request", "session/prompt", str(req))  # fmt: skip
        for _ in range(rng.randint(20, 60)):
            if seq >= frames - 1:
                break
            text = " ".join(rng.choices(vocab, k=rng.randint(3, 15)))
            if seq == frames // 2:
                text += " " + RARE
            if rng.random() < 0.05:
                tool += 1
                tcid = f"call_{tool}"
                add("a2c", {"jsonrpc": "2.0", "method": "session/update", "params": {
                    "sessionId": sid, "update": {"sessionUpdate": "tool_call", "toolCallId": tcid,
                    "title": text, "kind": "edit", "status": "pending"}}},
                    "notification", "session/update", None, "tool_call", tcid)  # fmt: skip
                continue
            add("a2c", {"jsonrpc": "2.0", "method": "session/update", "params": {
                "sessionId": sid, "update": {"sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": text}}}},
                "notification", "session/update", None, "agent_message_chunk")  # fmt: skip
        if seq < frames:
            add("a2c", {"jsonrpc": "2.0", "id": req, "result": {"stopReason": "end_turn"}},
                "response", "session/prompt", str(req), request_seq=prompt_seq,
                latency=t - prompt_t)  # fmt: skip
    return rows


_INSERT = (
    "INSERT INTO messages (capture_id, seq, direction, t_ns, raw, terminated, opcode, size, "
    "kind, method, msg_id, session_id, update_kind, tool_call_id, terminal_id, error_code, "
    "anomalies, request_seq, latency_ns) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)


def _capture(conn: sqlite3.Connection, cid: int, frames: int, end_ns: int) -> None:
    conn.execute(
        "INSERT INTO captures (id, uid, transport, agent_command, started_at, started_ns, "
        "ended_at, ended_ns, exit_code, protocol_version, client_info, agent_info, "
        "proxy_version, label, message_count, finished_at, end_reason) VALUES "
        "(?, ?, 'stdio', '[\"bench-agent\"]', '2026-01-01T00:00:00.000Z', 0, "
        "'2026-01-01T01:00:00.000Z', ?, 0, 1, '{\"name\":\"bench-client\"}', "
        "'{\"name\":\"bench-agent\"}', 'bench', 'bench', ?, '2026-01-01T01:00:00.000Z', "
        "'closed')",
        [cid, f"{cid:032x}", end_ns, frames],
    )


def build(db: Path, frames: int) -> None:
    t0 = time.perf_counter()
    rows = _rows(frames, 1)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = OFF")
    _schema(conn, 99)
    conn.execute("BEGIN")
    _capture(conn, 1, frames, int(rows[-1][3]))  # type: ignore[call-overload]
    conn.executemany(_INSERT, rows)
    conn.execute("COMMIT")
    conn.close()
    os.chmod(db, 0o600)
    size = db.stat().st_size
    print(f"built {frames} frames in {time.perf_counter() - t0:.1f} s ({size / 1e6:.0f} MB)")


class _Timed(sqlite3.Connection):
    """A connection that times its write transactions (BEGIN to COMMIT: the index file's
    are plain BEGINs, since BEGIN IMMEDIATE would lock every attached file)."""

    longest = 0.0
    durations: ClassVar[list[float]] = []
    _began = 0.0

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:  # type: ignore[override]
        if sql.startswith("BEGIN"):
            self._began = time.perf_counter()
        cur = super().execute(sql, *args)  # type: ignore[arg-type]
        if sql in ("COMMIT", "ROLLBACK") and self._began:
            took = time.perf_counter() - self._began
            _Timed.longest = max(_Timed.longest, took)
            _Timed.durations.append(took)
        return cur


def bench_index(db: Path) -> None:
    conn = sqlite3.connect(db, isolation_level=None, factory=_Timed)
    longest = 0.0
    t0 = time.perf_counter()
    total = 0
    while True:
        b0 = time.perf_counter()
        n = catch_up(conn, batch=500, limit=500)
        if not n:
            break
        total += n
        longest = max(longest, time.perf_counter() - b0)
    took = time.perf_counter() - t0
    conn.close()
    print(
        f"indexed {total} frames in {took:.1f} s ({total / took:,.0f} frames/s); "
        f"longest batch of 500 frames {longest * 1000:.0f} ms, of which its write "
        f"transaction {_Timed.longest * 1000:.0f} ms"
    )
    d = sorted(_Timed.durations)
    if d:
        p50, p99 = d[len(d) // 2], d[min(len(d) - 1, len(d) * 99 // 100)]
        print(
            f"index write transactions: {len(d)}, median {p50 * 1000:.1f} ms, "
            f"p99 {p99 * 1000:.1f} ms, longest {d[-1] * 1000:.0f} ms"
        )


def bench_insert(tmp: Path, n: int = 200_000, batch: int = 500) -> None:
    """Insert rate into messages in transactions of ``batch`` rows, as the recorder does."""
    rows = _rows(n, 1, seed=3)
    variants = (
        ("schema 3 (before search)", 3, False),
        ("schema 4 (this design)", 4, False),
        ("schema 4 + FTS trigger", 4, True),
    )
    best: dict[str, float] = {}
    for round_ in range(3):  # interleaved, best of three: the machine is shared
        for label, upto, trigger in variants:
            db = tmp / f"insert-{upto}-{int(trigger)}-{round_}.sqlite"
            conn = sqlite3.connect(db, isolation_level=None)
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            _schema(conn, upto)
            _capture(conn, 1, n, 0)
            if trigger:
                conn.execute(
                    "CREATE TRIGGER messages_fts AFTER INSERT ON messages BEGIN INSERT INTO "
                    "frames_fts (rowid, text) VALUES (new.id, CAST(new.raw AS TEXT)); END"
                )
            t0 = time.perf_counter()
            for i in range(0, len(rows), batch):
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany(_INSERT, rows[i : i + batch])
                conn.execute("COMMIT")
            took = time.perf_counter() - t0
            conn.close()
            for suffix in ("", "-wal", "-shm"):
                Path(f"{db}{suffix}").unlink(missing_ok=True)
            best[label] = max(best.get(label, 0.0), n / took)
    for label, rate in best.items():
        print(f"recorder inserts, {label}: {rate:,.0f} frames/s (best of 3)")


def _get(url: str, path: str) -> tuple[float, bytes]:
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(url.rstrip("/") + path, timeout=600) as r:
            body = r.read()
    except urllib.error.HTTPError as e:
        body = e.read()
        print(f"  ({path}: {e.code} {orjson.loads(body)['error']})")
    return time.perf_counter() - t0, body


def _rss(pid: int) -> tuple[int, int]:
    status = Path(f"/proc/{pid}/status").read_text()
    rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
    hwm = int(re.search(r"VmHWM:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
    return rss // 1024, hwm // 1024


def bench_server(db: Path, frames: int) -> None:
    proc, url = _serve(db)
    try:
        results = []
        t_head, _ = _get(url, "/api/captures/1")
        t_page, body = _get(url, "/api/captures/1/frames")
        assert orjson.loads(body)["frames"], body[:200]
        results.append(("open the capture: header + first page of 200", t_head + t_page))
        results.append(
            (
                "a page at the end (after=N-200)",
                _get(url, f"/api/captures/1/frames?after={frames - 201}")[0],
            )
        )
        results.append(
            (
                "a filtered page (kind=response)",
                _get(url, "/api/captures/1/frames?kind=response")[0],
            )
        )
        results.append(
            (
                "a filtered page (method=nomatch*: scans 5,000)",
                _get(url, "/api/captures/1/frames?method=nomatch*")[0],
            )
        )
        results.append(
            (
                "a page from a time (from_ms=mid)",
                _get(url, f"/api/captures/1/frames?from_ms={frames * 0.5}")[0],
            )
        )
        results.append(
            ("one frame's detail", _get(url, f"/api/captures/1/frames/{frames // 2}")[0])
        )
        exprs = [
            ("a filter SQLite decides (kind:error or method:fs/*)", "kind:error or method:fs/*"),
            ('a filter of text ("tool_call" -dir:c2a: 5,000 checked)', '"tool_call" -dir:c2a'),
        ]
        for label, text in exprs:
            expr = urllib.parse.quote(text)
            took, body = _get(url, "/api/captures/1/frames?filter=" + expr)
            results.append((f"{label} ({len(orjson.loads(body)['frames'])} frames)", took))
        results.append(("the stats tab's route", _get(url, "/api/captures/1/stats")[0]))
        for label, q in (
            ("search a rare word", RARE),
            ("search a common word (50 newest hits)", "agent_message_chunk"),
            ("search a phrase", "session/prompt"),
            ("search, one capture", f"{RARE}&capture=1"),
            ("search, no hit", "nosuchwordanywhere"),
        ):
            took, body = _get(url, "/api/search?q=" + q)
            hits = len(orjson.loads(body)["hits"])
            results.append((f"{label} ({hits} hits)", took))
        for label, took in results:
            print(f"ui: {label}: {took * 1000:.0f} ms")
        rss, hwm = _rss(proc.pid)
        print(f"ui server RSS after these: {rss} MB (peak {hwm} MB)")
    finally:
        _stop(proc)
    _views(db, frames)
    proc, url = _serve(db)  # a fresh server: the tabs find no fold made yet
    try:
        _browser(url, frames)
        rss, hwm = _rss(proc.pid)
        print(f"ui server RSS after the browser: {rss} MB (peak {hwm} MB)")
    finally:
        _stop(proc)


# a tab's list, then what it shows beside it; the sessions tab first, the turns tab's page
# after it (their fold made already: what is left is the page)
VIEWS = ("sessions", "messages", "turns", "permissions", "tools", "mcp", "terminals", "diffs",
         "files")  # fmt: skip
PAGED = ("turns", "permissions", "tools", "terminals", "diffs")
SHARED = ("messages", "turns", "permissions")
"""Views folded from the sessions part, folded by an earlier one here."""


def _views(db: Path, frames: int) -> None:
    """Each view's route and the state at a frame near the end, on a fresh server: how long
    each takes (those of one part share its fold: the first pays for it), what it sends,
    and the server's memory after them all (the views folded from the sessions part come
    first, so the peak is theirs)."""
    proc, url = _serve(db)
    try:
        for view in VIEWS:
            query = "?limit=200" if view in PAGED else ""
            took, body = _get(url, f"/api/captures/1/view/{view}{query}")
            what = "refused" if body.startswith(b'{"error"') else f"{len(body) / 1e6:.1f} MB"
            shared = ", the sessions part folded already" if view in SHARED else ""
            print(f"ui: the {view} view ({what}{shared}): {took * 1000:.0f} ms")
        rss, hwm = _rss(proc.pid)
        print(f"ui server RSS after the views: {rss} MB (peak {hwm} MB)")
        at = frames - 1000
        took, body = _get(url, f"/api/captures/1/state?at={at}")
        what = "refused" if body.startswith(b'{"error"') else f"{len(body) / 1e6:.1f} MB"
        print(f"ui: the state at frame {at} ({what}): {took * 1000:.0f} ms")
        rss, hwm = _rss(proc.pid)
        print(f"ui server RSS after the state: {rss} MB (peak {hwm} MB)")
    finally:
        _stop(proc)


def _serve(db: Path) -> tuple[subprocess.Popen[bytes], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "acp_proxy", "ui", "--db", str(db), "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().decode().split(" at ")[1].strip()


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        print("ui server: not stopped 60 s after SIGINT; killed")
        proc.kill()
        proc.wait(30)


def _browser(url: str, frames: int) -> None:
    if not Path("/usr/bin/chromium").exists():
        return
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return
    args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=args)
        page = b.new_page()
        page.goto(url)
        page.wait_for_selector("#captures tr")
        t0 = time.perf_counter()
        page.goto(url + "#/c/1")
        page.wait_for_selector('#frames tr[data-seq="0"]')
        print(
            "browser: the capture shows its first row "
            f"{time.perf_counter() - t0:.2f} s after navigation"
        )
        t0 = time.perf_counter()
        page.fill("#search-input", RARE)
        page.press("#search-input", "Enter")
        page.click(".hit a")
        page.wait_for_selector("#frame-detail mark")
        print(f"browser: search, click the hit, its frame shown: {time.perf_counter() - t0:.2f} s")
        _every_tab(page, url)
        _state(page, url, frames - 1000)
        b.close()


TAB_LIMIT_S = 3.0
"""Each tab of a 1 M-frame capture should show within this (the target)."""


def _every_tab(page: Any, url: str) -> None:
    """Each tab of the capture, from a fresh page: the time until it shows its content (or
    its refusal), against :data:`TAB_LIMIT_S`."""
    shown = (
        "() => { const v = document.getElementById('view'); const odd = document.querySelector("
        "'#app > p.odd'); return odd !== null || (v !== null && v.childElementCount > 0 &&"
        " !v.querySelector('#frames:empty')); }"
    )
    for tab in ("f", "stats", "log", "turns", "tools", "permissions", "terminals", "diffs",
                "files", "sessions"):  # fmt: skip
        # the turns tab folds the sessions part: the permissions and sessions tabs find it
        page.goto(url + "#/")
        page.wait_for_selector("#captures tr")
        t0 = time.perf_counter()
        page.goto(url + f"#/c/1/{tab}")
        page.wait_for_function(shown, timeout=600_000, polling=20)
        took = time.perf_counter() - t0
        text = page.locator("#app").inner_text()
        refused = page.locator("#app > p.odd").count() > 0
        what = "refused: too large to fold here" if refused else "shown"
        if not refused and "too large to fold" in text:
            what = "shown, a part refused: too large to fold here"
        verdict = "met" if took <= TAB_LIMIT_S and not refused else "NOT met"
        name = "timeline" if tab == "f" else tab
        print(f"browser: the {name} tab: {took:.2f} s, {what} ({verdict}: {TAB_LIMIT_S:.0f} s)")


def _state(page: Any, url: str, at: int) -> None:
    """The state at frame ``at`` (a frame's detail, its "State at this frame" button): the
    time until its sections are shown."""
    page.goto(url + f"#/c/1/f/{at}")
    page.wait_for_selector("#state-button")
    t0 = time.perf_counter()
    page.click("#state-button")
    page.wait_for_selector("#state-box h2, #state-box p.odd", timeout=600_000)
    took = time.perf_counter() - t0
    refused = page.locator("#state-box p.odd").count() > 0
    print(f"browser: the state at frame {at}: {took:.2f} s, {'refused' if refused else 'shown'}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=1_000_000)
    ap.add_argument("--db", type=Path, default=None)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument(
        "--no-index",
        action="store_true",
        help="skip the indexing figures (a "
        "database never indexed is then indexed by the server while it is measured)",
    )
    ap.add_argument("--no-insert", action="store_true", help="skip the insert figures")
    ap.add_argument("--reindex", action="store_true", help="with --db: index it all again")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-ui-"))
    os.chmod(tmp, 0o700)
    db = args.db or tmp / "big.sqlite"
    if not db.exists():
        build(db, args.frames)
    elif args.reindex:  # the index is a file of its own beside the database
        for suffix in ("", "-wal", "-shm"):
            Path(f"{search_path(db)}{suffix}").unlink(missing_ok=True)
    if not args.no_index:
        bench_index(db)
    if not args.no_insert:
        bench_insert(tmp)
    bench_server(db, args.frames)
    if not args.keep:
        for f in tmp.iterdir():
            f.unlink()
        tmp.rmdir()


if __name__ == "__main__":
    main()

"""What the inspector's routes compute, on a real recorded database: the fold limit that
keeps the server's memory bounded, and a live capture folded incrementally."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_proxy.errors import UsageError
from acp_proxy.reconstruct import reconstruct
from acp_proxy.reconstruct.views import tools_json
from acp_proxy.store.db import schema_migrations
from acp_proxy.store.reader import Store
from acp_proxy.text.safe import json_bytes
from acp_proxy.ui.api import VIEWS, Folds, check_foldable, frame_detail, frames_page
from acp_proxy.ui.folds import capture_uid


@pytest.fixture
def demo(demo_copy: Path) -> Store:
    return Store(demo_copy, readonly=True)


def test_fold_limit(demo: Store) -> None:
    check_foldable(demo, 1, limit=46)
    check_foldable(demo, 1, at=9, limit=10)
    with pytest.raises(UsageError, match=r"46 frames.*acp-proxy export 1 --format patch"):
        check_foldable(demo, 1, limit=45, fmt="patch")
    with pytest.raises(UsageError, match="11 frames"):
        check_foldable(demo, 1, at=10, limit=10)


def test_incremental_fold_is_the_whole_fold(demo: Store, db: Path) -> None:
    folds = Folds()
    whole = tools_json(reconstruct(sf.frame for sf in demo.frames(1)))
    # the fold kept from an earlier look at the first 20 frames, then brought up to date
    r = reconstruct((sf.frame for sf in demo.frames(1, upto_seq=19)), at=19)
    folds._folds[(1, capture_uid(demo, 1))] = (r, 19)
    assert folds.view(demo, 1, "tools") == whole
    assert folds.view(demo, 1, "tools", at=12) == tools_json(
        reconstruct((sf.frame for sf in demo.frames(1)), at=12)
    )


def test_frames_page_scans_a_bounded_number(demo: Store) -> None:
    from acp_proxy.text.timeline import FrameFilter

    page = frames_page(demo, 1, flt=FrameFilter(method="no/such"))
    assert page == {"frames": [], "next": 45, "done": True, "scanned": 46}
    page = frames_page(demo, 1, after=40, limit=2)
    assert [f["seq"] for f in page["frames"]] == [41, 42] and not page["done"]


_EMPTY: dict[Path, bytes] = {}  # the schema and one capture, made once per directory


def _one_frame_db(path: Path, raw: bytes, opcode: str | None) -> Store:
    empty = _EMPTY.get(path.parent)
    if empty is None:  # every migration, each its own commit: made once, then copied
        made = path.with_name("empty.sqlite")
        conn = sqlite3.connect(made)
        conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL, applied_at TEXT)")
        for _, sql in schema_migrations():
            conn.executescript(sql)
        conn.execute(
            "INSERT INTO captures (id, uid, transport, started_at, started_ns, proxy_version) "
            "VALUES (1, 'u', 'ws', 'x', 0, 'p')"
        )
        conn.commit()
        conn.close()
        empty = _EMPTY[path.parent] = made.read_bytes()
    path.write_bytes(empty)
    conn = sqlite3.connect(path)
    conn.execute(
        "INSERT INTO messages (capture_id, seq, direction, t_ns, raw, terminated, opcode, size, "
        "kind) VALUES (1, 0, 'a2c', 0, ?, 0, ?, ?, 'invalid')",
        [raw, opcode, len(raw)],
    )
    conn.commit()
    conn.close()
    path.chmod(0o600)
    return Store(path, readonly=True)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    raw=st.binary(max_size=200)
    | st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
        lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids),
        max_leaves=12,
    ).map(lambda v: json.dumps(v).encode()),
    opcode=st.sampled_from([None, "text", "binary"]),
)
def test_any_frame_has_a_detail(tmp_path: Path, raw: bytes, opcode: str | None) -> None:
    path = tmp_path / f"one-{abs(hash((raw, opcode)))}.sqlite"
    store = _one_frame_db(path, raw, opcode)
    try:
        row = frames_page(store, 1)["frames"][0]
        assert row["seq"] == 0 and isinstance(row["summary"], str)
        d = frame_detail(store, 1, 0)
        # the exact bytes come back: as text, and in hex whenever they are not UTF-8 text
        try:
            raw.decode("utf-8")
            text = opcode != "binary"
            assert d["text"].encode("utf-8") == raw
        except UnicodeDecodeError:
            text = False
            assert "\\x" in d["text"]
        assert (d["hex"] is None) == text
        if d["hex"] is not None:
            assert bytes.fromhex(d["hex"]) == raw
    finally:
        store.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)


def test_a_filter_expression_pages_what_it_keeps(demo: Store) -> None:
    from acp_proxy.text.timeline import Expression

    page = frames_page(demo, 1, expr=Expression("kind:request dir:c2a method:session/*"))
    rows = page["frames"]
    assert rows and page["done"]
    assert all(r["kind"] == "request" and r["direction"] == "c2a" for r in rows)
    assert {r["method"] for r in rows} >= {"session/new", "session/prompt"}
    # text is decided in Python, within the scan bound
    said = frames_page(demo, 1, expr=Expression('dir:a2c "end_turn"'))["frames"]
    assert said and all("end_turn" in r["summary"] for r in said)


def test_a_request_row_says_when_its_answer_came(demo: Store) -> None:
    rows = {r["seq"]: r for r in frames_page(demo, 1, limit=1000)["frames"]}
    answers = [r for r in rows.values() if r["request_seq"] is not None]
    assert answers
    for a in answers:
        req = rows[a["request_seq"]]
        assert req["answer_seq"] == a["seq"] and req["end_ms"] == a["t_ms"]


def test_stats_per_method_and_error_code(demo: Store) -> None:
    from acp_proxy.ui.stats import percentile, stats_json

    s = stats_json(demo, 1)
    by = {(m["method"], m["direction"]): m for m in s["methods"]}
    prompt = by[("session/prompt", "c2a")]
    assert prompt["requests"] == prompt["answered"] >= 1
    assert prompt["p50_ms"] is not None and prompt["p50_ms"] <= prompt["p99_ms"] <= prompt["max_ms"]
    asked = demo.conn.execute(
        "SELECT COUNT(*) FROM messages WHERE capture_id = 1 AND kind = 'request'"
    ).fetchone()[0]
    assert sum(m["requests"] for m in s["methods"]) == asked
    assert percentile([1, 2, 3, 4], 50) == 2 and percentile([5], 99) == 5
    assert percentile(list(range(1, 101)), 90) == 90 and percentile([], 50) is None


@pytest.mark.parametrize("view", list(VIEWS))
def test_a_large_captures_view_is_folded_from_what_it_needs(
    demo: Store, monkeypatch: pytest.MonkeyPatch, view: str
) -> None:
    from acp_proxy.ui import folds as ui_folds

    folded = Folds().view(demo, 1, view)
    whole_page = Folds().page(demo, 1, view, None, 1, 2)
    monkeypatch.setattr(ui_folds, "FOLD_MAX", 10)  # the demo is now "too large to fold here"
    with pytest.raises(UsageError, match="too large to fold"):
        ui_folds.check_foldable(demo, 1)  # what the exports that need the whole fold ask
    folds = Folds()
    streamed = folds.view(demo, 1, view)
    assert json_bytes(streamed) == json_bytes(folded)
    assert streamed or view in ("permissions", "messages", "mcp")  # the demo has none
    page = folds.page(demo, 1, view, None, 1, 2)
    assert page["items"] == folded[1:3] and page["total"] == len(folded) and page == whole_page


def test_the_state_at_a_frame_of_a_large_capture_is_that_of_the_whole_fold(
    demo: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acp_proxy.ui import at_frame
    from acp_proxy.ui import folds as ui_folds

    last = demo.conn.execute("SELECT MAX(seq) FROM messages WHERE capture_id = 1").fetchone()[0]
    ats = sorted({3, last // 2, last})
    whole = [at_frame.state_json(demo, 1, at) for at in ats]
    monkeypatch.setattr(at_frame, "STATE_ITEMS", 1)  # a long capture's lists: the last items
    cut = at_frame.state_json(demo, 1, last)
    monkeypatch.setattr(ui_folds, "FOLD_MAX", 2)
    folds = Folds()
    assert json_bytes(at_frame.state_json(demo, 1, last, folds)) == json_bytes(cut)
    monkeypatch.setattr(at_frame, "STATE_ITEMS", 200)
    assert [json_bytes(at_frame.state_json(demo, 1, at, folds)) for at in ats] == [
        json_bytes(w) for w in whole
    ]
    kept = folds.parted(demo, 1, "turns", None)  # the turns tab's fold
    at_frame.state_json(demo, 1, last // 2, folds)
    assert folds.parted(demo, 1, "turns", None) is kept  # a state does not put it out
    end = whole[-1]
    assert end["turns"] and end["tools"] and end["files"] and end["terminals"]
    assert cut["counts"] == {k: len(end[k]) for k in cut["counts"]}
    assert all(cut[k] == end[k][-1:] for k in cut["counts"])


def test_a_large_capture_being_recorded_has_its_fold_brought_up_to_date(
    demo_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the fold limit, the fold of the sessions part kept for a capture that grows is
    brought up to date with the frames recorded since (a page of its turns read before),
    not made again; its views are the whole fold's."""
    from acp_proxy.ui import folds as ui_folds

    views = ("turns", "permissions", "sessions", "messages")
    whole = {v: json_bytes(Folds().view(Store(demo_copy, readonly=True), 1, v)) for v in views}
    part = _recorded_up_to(demo_copy, tmp_path, 20)
    monkeypatch.setattr(ui_folds, "FOLD_MAX", 2)
    store, folds = Store(part, readonly=True), Folds()
    first = folds.parted(store, 1, "turns", None)
    assert folds.page(store, 1, "turns", None, 0, 10)["items"]
    _record_the_rest(part, demo_copy, 20)
    assert folds.parted(store, 1, "turns", None) is first
    assert {v: json_bytes(folds.view(store, 1, v)) for v in views} == whole


def test_a_kept_fold_is_grown_and_read_under_one_lock(
    demo_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page never sees a turn half folded: every step that grows a kept fold (the frames
    since) or reads it (a page, a view, a page's text) runs with the readers' lock held.
    Checked where each step runs, not by racing threads."""
    from acp_proxy.ui import folds as ui_folds

    part = _recorded_up_to(demo_copy, tmp_path, 20)
    monkeypatch.setattr(ui_folds, "FOLD_MAX", 2)
    store, folds = Store(part, readonly=True), Folds()
    steps: list[str] = []

    def locked(name: str, step: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            assert folds._reading._is_owned(), f"{name} without the readers' lock"  # type: ignore[attr-defined]
            steps.append(name)
            return step(*args, **kwargs)

        return run

    for name in ("_fold_since", "read_text", "_page_items"):
        monkeypatch.setattr(ui_folds, name, locked(name, getattr(ui_folds, name)))
    view_function = ui_folds._view_function
    monkeypatch.setattr(
        ui_folds, "_view_function", lambda name: locked("view", view_function(name))
    )
    folds.page(store, 1, "turns", None, 0, 10)
    _record_the_rest(part, demo_copy, 20)
    folds.page(store, 1, "turns", None, 0, 10)
    folds.view(store, 1, "turns")
    folds.view(store, 1, "permissions")
    assert set(steps) == {"_fold_since", "read_text", "_page_items", "view"}, steps


def _recorded_up_to(demo_copy: Path, tmp_path: Path, seq: int) -> Path:
    """A copy of the demo database whose capture is as it was before frame ``seq``."""
    part = tmp_path / "part.sqlite"
    part.touch(0o600)
    with sqlite3.connect(demo_copy) as source, sqlite3.connect(part) as copy:
        source.backup(copy)
        for table in ("messages", "batch_items"):
            copy.execute(f"DELETE FROM {table} WHERE capture_id = 1 AND seq >= ?", [seq])
    return part


def _record_the_rest(part: Path, demo_copy: Path, seq: int) -> None:
    """The frames of the demo from ``seq`` on, recorded into ``part`` meanwhile."""
    with sqlite3.connect(part) as conn:
        conn.execute("ATTACH ? AS whole", [str(demo_copy)])
        for table in ("messages", "batch_items"):
            conn.execute(f"INSERT INTO {table} SELECT * FROM whole.{table} WHERE seq >= ?", [seq])


@pytest.mark.parametrize("fold_max", [100_000, 2], ids=["whole fold", "parts"])
def test_a_fold_kept_is_not_taken_for_a_new_capture_of_the_same_number(
    db: Path, monkeypatch: pytest.MonkeyPatch, fold_max: int
) -> None:
    """A capture removed, and a longer one recorded under its number (the highest is given
    again): the fold kept of the first is not brought up to date with the second's frames
    as if they were the first's."""
    import subprocess
    import sys

    from support.paths import RECORDINGS

    from acp_proxy.ui import folds as ui_folds

    def cli(*args: str) -> None:
        subprocess.run([sys.executable, "-m", "acp_proxy", *args, "--db", str(db)], check=True)

    monkeypatch.setattr(ui_folds, "FOLD_MAX", fold_max)
    cli("import", str(RECORDINGS / "sdk-v1.jsonl"))
    store, folds = Store(db, readonly=True), Folds()
    assert folds.view(store, 1, "turns")
    cli("rm", "1")
    cli("import", str(RECORDINGS / "demo-v1.jsonl"))  # more frames than the first
    assert store.conn.execute("SELECT id FROM captures").fetchall() == [(1,)]
    fresh = Folds().view(store, 1, "turns")
    assert json_bytes(folds.view(store, 1, "turns")) == json_bytes(fresh)


def test_the_tabs_of_one_part_share_one_fold_made_once(
    demo: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from acp_proxy.ui import folds as ui_folds

    monkeypatch.setattr(ui_folds, "FOLD_MAX", 10)
    folds = Folds()
    got: list[object] = []
    asking = [
        threading.Thread(target=lambda n=n: got.append(folds.parted(demo, 1, n, None)))
        for n in ("turns", "sessions", "permissions", "messages")
    ]
    for t in asking:  # four tabs at once: one fold, the others wait for it
        t.start()
    for t in asking:
        t.join()
    assert len(got) == 4 and all(r is got[0] for r in got)
    files = folds.parted(demo, 1, "files", None)  # another kind of fold keeps the first
    assert folds.parted(demo, 1, "turns", None) is got[0] and files is not got[0]
    assert folds.parted(demo, 1, "turns", 20) is not got[0]  # another frame, another fold
    at: dict[int | None, object] = {}
    asking = [  # two frames at once: one fold after the other, each of its own frame
        threading.Thread(target=lambda a=a: at.update({a: folds.parted(demo, 1, "turns", a)}))
        for a in (None, 30)
    ]
    for t in asking:
        t.start()
    for t in asking:
        t.join()
    assert at[None].last_seq > at[30].last_seq == 30  # type: ignore[attr-defined]


def test_a_large_capture_the_recorder_could_not_describe_is_folded_from_every_frame(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from support.messages import frames_of, import_frames, initialize

    from acp_proxy.protocol.frames import Direction
    from acp_proxy.ui import folds as ui_folds

    agent, client = Direction.AGENT_TO_CLIENT, Direction.CLIENT_TO_AGENT
    write = {"sessionId": "s", "path": "/w/f", "content": "x"}
    mcp = {"serverId": "m", "requestId": "r1", "method": "tools/call", "params": {"name": "o"}}
    lines = [
        *initialize(2),
        # a batch: its entries' answers cannot be found by a frame's seq
        (agent, [{"jsonrpc": "2.0", "id": 1, "method": "fs/write_text_file", "params": write}]),
        (client, {"jsonrpc": "2.0", "id": 1, "result": {}}),
        (agent, {"jsonrpc": "2.0", "id": 2, "method": "mcp/message", "params": mcp}),
        (client, {"jsonrpc": "2.0", "id": 2, "result": {"result": {"content": []}}}),
    ]
    raws = [(d, json.dumps(m).encode(), None) for d, m in lines]
    cid = import_frames(tmp_path / "c.sqlite", frames_of(raws), tmp_path)  # type: ignore[arg-type]
    store = Store(tmp_path / "c.sqlite", readonly=True)
    views = ("diffs", "files", "mcp", "tools")
    whole = {v: Folds().page(store, cid, v, None, 0, 10) for v in views}
    assert whole["diffs"]["items"] and whole["files"]["items"] and whole["mcp"]["items"]
    monkeypatch.setattr(ui_folds, "FOLD_MAX", 1)
    folds = Folds()
    assert {v: folds.page(store, cid, v, None, 0, 10) for v in views} == whole
    assert {v: folds.view(store, cid, v) for v in views} == {v: whole[v]["items"] for v in views}


def test_a_large_captures_session_tree_keeps_its_subagents(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    from support.paths import TESTS
    from support.proc import PROXY

    from acp_proxy.ui import folds as ui_folds

    recording = TESTS / "data" / "replay" / "v2-two-children.jsonl"
    subprocess.run([*PROXY, "import", "--db", str(db), str(recording)], check=True,
                   capture_output=True)  # fmt: skip
    store = Store(db, readonly=True)
    folded = Folds().view(store, 1, "sessions")
    assert any(s.get("parentSessionId") for s in folded)  # children under their parent
    monkeypatch.setattr(ui_folds, "FOLD_MAX", 3)
    assert Folds().view(store, 1, "sessions") == json.loads(json.dumps(folded))


def test_search_counts_hits_up_to_a_bound(
    demo: Store, demo_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3 as sq

    from acp_proxy.store.index import catch_up
    from acp_proxy.ui import api

    conn = sq.connect(demo_copy, isolation_level=None)
    catch_up(conn)
    conn.close()
    every = api.search_json(demo, "jsonrpc", limit=5)
    assert len(every["hits"]) == 5 and every["next"] is not None
    assert every["count"] >= 40 and not every["at_least"]  # every frame, counted
    monkeypatch.setattr(api, "COUNT_MAX", 10)
    bounded = api.search_json(demo, "jsonrpc", limit=5)
    assert bounded["count"] == 10 and bounded["at_least"]
    assert "count" not in api.search_json(demo, "jsonrpc", limit=5, before=every["next"])

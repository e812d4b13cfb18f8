"""Proxy chains recorded hop by hop (docs/protocol.md §13.4): a conductor run by
``acp-proxy record`` starts a proxy and the agent, each under an ``acp-proxy record`` of its
own; every hop says which chain it belongs to, and ``acp-proxy chain`` shows them as one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.proc import PROXY, db_rows, peer, run_proxy, wait_recorded

DEMO_CLIENT = [sys.executable, "-m", "acp_proxy.demo.client"]
DEMO_AGENT = [sys.executable, "-m", "acp_proxy.demo.agent"]


def _record(db: Path, *argv: str) -> list[str]:
    return [*PROXY, "record", "--db", str(db), "--", *argv]


@pytest.fixture(scope="module")
def chained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo client, through a recorded conductor, a recorded proxy and a recorded agent."""
    db = tmp_path_factory.mktemp("chain") / "chain.sqlite"
    proxy = _record(db, *peer("chain.py", "proxy"))
    agent = _record(db, *DEMO_AGENT)
    conductor = _record(db, *peer("chain.py", "conduct", json.dumps(proxy), json.dumps(agent)))
    env = {k: v for k, v in os.environ.items() if k != "ACP_PROXY_CHAIN"}
    r = subprocess.run([*DEMO_CLIENT, "--", *conductor], capture_output=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr.decode()
    wait_recorded(db)
    return db


def _chain(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PROXY, "chain", "--db", str(db), *args], capture_output=True, text=True, timeout=60
    )


def _commands(db: Path) -> dict[str, int]:
    """Capture ids by what they ran: the conductor, the proxy, the agent."""
    out = {}
    for cid, command in db_rows(db, "SELECT id, agent_command FROM captures"):
        argv = json.loads(str(command))
        out["conductor" if "conduct" in argv else "proxy" if "proxy" in argv else "agent"] = cid
    return out


def test_each_hop_records_its_chain_and_parent(chained: Path) -> None:
    ids = _commands(chained)
    assert sorted(ids) == ["agent", "conductor", "proxy"]
    (outer_uid,) = db_rows(chained, "SELECT uid FROM captures WHERE id = ?", [ids["conductor"]])[0]
    links = dict(db_rows(chained, "SELECT capture_id, detail FROM events WHERE kind = 'chain'"))
    assert sorted(links) == sorted([ids["proxy"], ids["agent"]])  # the outer capture is no hop
    for cid in (ids["proxy"], ids["agent"]):
        assert json.loads(str(links[cid])) == {"chain": outer_uid, "parent": outer_uid,
                                               "role": "hop"}  # fmt: skip
    # the hop learns its version and peers from proxy/initialize as from initialize
    (version,) = db_rows(chained, "SELECT protocol_version FROM captures WHERE id = ?",
                         [ids["proxy"]])[0]  # fmt: skip
    assert version == 1


def _first_frames(frames: list[dict[str, Any]], n: int) -> list[tuple[int, str, str]]:
    return [(f["hop"], f["direction"], f["method"]) for f in frames[:n]]


@pytest.mark.parametrize("which", ["conductor", "proxy", "agent"])
def test_chain_lists_every_hop_and_one_timeline(chained: Path, which: str) -> None:
    ids = _commands(chained)
    r = _chain(chained, str(ids[which]), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert [(h["capture"], h["role"]) for h in out["hops"]] == [
        (ids["conductor"], "outer"),
        (ids["proxy"], "proxy"),
        (ids["agent"], "agent"),
    ]
    frames = out["frames"]
    counts = db_rows(chained, "SELECT sum(message_count) FROM captures")[0][0]
    assert len(frames) == counts
    assert [f["t_ms"] for f in frames] == sorted(f["t_ms"] for f in frames)
    # each hop's step causes the next: the merged order is the conversation's
    assert _first_frames(frames, 8) == [
        (0, "c2a", "initialize"),
        (1, "c2a", "proxy/initialize"),
        (1, "a2c", "proxy/successor"),
        (2, "c2a", "initialize"),
        (2, "a2c", "initialize"),
        (1, "c2a", "proxy/successor"),
        (1, "a2c", "proxy/initialize"),
        (0, "a2c", "initialize"),
    ]


def test_chain_as_text_says_which_hop(chained: Path) -> None:
    ids = _commands(chained)
    r = _chain(chained, str(ids["agent"]))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("proxy chain ") and lines[0].endswith(": 3 capture(s)")
    assert lines[1].startswith(f"  hop 0  capture {ids['conductor']}  outer")
    assert lines[2].startswith(f"  hop 1  capture {ids['proxy']}  proxy")
    assert lines[3].startswith(f"  hop 2  capture {ids['agent']}  agent")
    timeline = [line for line in lines[5:] if line]
    assert "hop 0 #0     → request      initialize [0]" in timeline[0]
    assert "hop 1 #0     → request      proxy/initialize" in timeline[1]
    assert "to successor: initialize" in timeline[2]
    shown = subprocess.run([*PROXY, "show", "--db", str(chained), str(ids["proxy"])],
                           capture_output=True, text=True, timeout=60)  # fmt: skip
    assert "chain        hop of proxy chain " in shown.stdout


def test_a_capture_outside_any_chain(db: Path) -> None:
    r = run_proxy(db, DEMO_AGENT, b"", env={**os.environ, "ACP_PROXY_CHAIN": "not ours"})
    assert r.returncode == 0, r.stderr
    assert db_rows(db, "SELECT count(*) FROM events WHERE kind = 'chain'") == [(0,)]
    r2 = _chain(db, "1")
    assert r2.returncode != 0
    assert "not part of a proxy chain" in r2.stderr


def test_the_ui_says_which_hop_a_capture_is(chained: Path) -> None:
    from acp_proxy.store.reader import Store
    from acp_proxy.ui.api import capture_json

    ids = _commands(chained)
    store = Store(chained, readonly=True)
    try:
        proxy = capture_json(store, str(ids["proxy"]))["chain"]
        outer = capture_json(store, str(ids["conductor"]))["chain"]
    finally:
        store.close()
    hops = [{"capture": ids[n], "role": r} for n, r in
            (("conductor", "outer"), ("proxy", "proxy"), ("agent", "agent"))]  # fmt: skip
    assert proxy["hop"] == 1 and proxy["hops"] == hops
    assert outer["hop"] == 0 and outer["id"] == proxy["id"]

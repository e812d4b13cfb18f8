"""The HTML page's session tree, retried prompts and MCP calls (docs/protocol.md §13), on
the hand-written fixtures: each child under its parent, history marked, a retry shown on
its one turn, MCP calls over ACP in a table, and a peer's words escaped."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from support.paths import DATA
from support.proc import PROXY

FIXTURES = DATA / "reconstruct"


def _page(source: Path, tmp_path: Path) -> str:
    out = tmp_path / "page.html"
    r = subprocess.run([*PROXY, "export", str(source), "--format", "html", "-o", str(out)],
                       capture_output=True, timeout=60)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return out.read_text()


def _section(page: str, title: str) -> str:
    m = re.search(f"<h2>{title}</h2>(.*?)<h2>", page, re.S)
    assert m is not None, f"no {title} section"
    return m.group(1)


def test_the_session_tree_with_children_history_and_messages(tmp_path: Path) -> None:
    tree = _section(_page(FIXTURES / "v2-subagents.jsonl", tmp_path), "Sessions")
    parent, child = tree.index("session <code>parent</code>"), tree.index("<code>child</code>")
    assert parent < tree.index("<ul class=tree>", parent) < child  # the child nested inside
    assert "subagent <code>child</code> · test runner · running" in tree
    assert "run by tool call <code>t1</code>" in tree
    assert '<span class=badge>history</span> 4 update(s) replayed history · session/resume ' \
           '<a href="#f21">#21</a>: complete' in tree  # fmt: skip
    assert '<a href="#f12">#12</a> parent → child: run cargo test' in tree


def test_a_retried_turn_and_mcp_calls(tmp_path: Path) -> None:
    turns = _section(_page(FIXTURES / "v2-subagents.jsonl", tmp_path), "Turns")
    assert turns.count("<tr") == 2  # the header and one turn: the retry is not a turn
    assert 'retried 1×: <a href="#f5">#5</a>' in turns
    mcp = _section(_page(FIXTURES / "v1-mcp-over-acp.jsonl", tmp_path), "MCP over ACP")
    assert "<code>tools/call open_file</code>" in mcp
    assert "<tr class=err>" in mcp and "unknown tool" in mcp


def test_a_plain_session_has_no_tree_and_peer_words_are_escaped(tmp_path: Path) -> None:
    page = _page(DATA / "replay" / "v2_session.jsonl", tmp_path)
    assert "<h2>Sessions</h2>" not in page
    hostile = tmp_path / "hostile.jsonl"
    rows = [json.loads(line) for line in (FIXTURES / "v2-subagents.jsonl").read_text().splitlines()]
    for r in rows:
        r["text"] = r["text"].replace("run cargo test", "<script>alert(1)</script>")
    hostile.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tree = _section(_page(hostile, tmp_path), "Sessions")
    assert "<script>" not in tree and "&lt;script&gt;alert(1)&lt;/script&gt;" in tree

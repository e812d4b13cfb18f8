"""The inspector in a real browser on subagent captures (docs/protocol.md §13): the session
tree with each child under its parent, messages between sessions and history marked; a
retried turn; MCP calls over ACP in the tools view; and a proxy chain's hops linked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from support.paths import DATA
from support.proc import PROXY, peer, wait_recorded
from support.ui import playwright_sync_api, ui_server

pytestmark = pytest.mark.browser
sync_api = playwright_sync_api()  # skips this module where playwright is not installed

expect = sync_api.expect
FIXTURES = DATA / "reconstruct"


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Capture 1: v2 subagents; 2: MCP over ACP; 3–5: a proxy chain (outer, proxy, agent)."""
    d = tmp_path_factory.mktemp("ui-sessions")
    d.chmod(0o700)
    db = d / "sessions.sqlite"
    for name in ("v2-subagents", "v1-mcp-over-acp"):
        subprocess.run([*PROXY, "import", "--db", str(db), str(FIXTURES / f"{name}.jsonl")],
                       check=True, capture_output=True, timeout=60)  # fmt: skip
    record = [*PROXY, "record", "--db", str(db), "--"]
    proxy = [*record, *peer("chain.py", "proxy")]
    agent = [*record, sys.executable, "-m", "acp_proxy.demo.agent"]
    conductor = [*record, *peer("chain.py", "conduct", json.dumps(proxy), json.dumps(agent))]
    env = {k: v for k, v in os.environ.items() if k != "ACP_PROXY_CHAIN"}
    subprocess.run([sys.executable, "-m", "acp_proxy.demo.client", "--", *conductor],
                   check=True, capture_output=True, timeout=120, env=env)  # fmt: skip
    wait_recorded(db)
    with ui_server(db) as u:
        yield u


def test_the_session_tree(page: Any, url: str) -> None:
    page.goto(url + "#/c/1/sessions")
    tree = page.locator("#sessions")
    parent = tree.locator("#item-parent")
    expect(parent).to_contain_text("Session parent")
    expect(parent.locator(".badge.history").first).to_have_text("history")
    expect(parent).to_contain_text("4 update(s) replayed history")
    expect(parent).to_contain_text("child → parent: all 12 pass")
    # the child is in the list under its parent's card, not beside it
    child = tree.locator("li.session ul.tree li.session #item-child")
    expect(child).to_contain_text("Subagent child · test runner")
    expect(child).to_contain_text(
        "child of parent, announced #10 · can be cancelled · run by tool call t1"
    )
    expect(child.locator("ul.messages li")).to_have_text(["#12 parent → child: run cargo test"])
    assert "{" not in tree.inner_text()  # a tree, not a dump of JSON
    child.locator("a", has_text="t1").click()
    expect(page.locator("#item-t1")).to_have_class("card target")


def test_a_retried_turn(page: Any, url: str) -> None:
    page.goto(url + "#/c/1/turns")
    expect(page.locator("#view .card")).to_have_count(1)  # one turn: two prompts, one key
    expect(page.locator(".badge.retry")).to_have_text("retried 1×")
    expect(page.locator(".retries")).to_contain_text(
        "the prompt was sent again with idempotencyKey submit-1: #5 (messageId u1)"
    )


def test_mcp_calls_in_the_tools_view(page: Any, url: str) -> None:
    page.goto(url + "#/c/2/tools")
    rows = page.locator("#mcp tr")
    expect(rows).to_have_count(6)  # the header and five calls
    expect(rows.nth(1)).to_contain_text("tools/call open_file")
    expect(rows.nth(2)).to_contain_text("error -32602 unknown tool")
    expect(rows.nth(2)).to_have_class("odd")


def test_a_hop_links_its_chain(page: Any, url: str) -> None:
    page.goto(url + "#/c/3")  # the outer capture starts first; its hops race for 4 and 5
    line = page.locator("#chain")
    expect(line).to_contain_text("hop 0 of proxy chain")
    expect(line.locator("strong")).to_have_text("hop 0 (outer)")
    line.locator("a", has_text="hop 1 (proxy, capture ").click()
    expect(page.locator("#chain strong")).to_have_text("hop 1 (proxy)")
    expect(page.locator("#capture-head h1")).to_contain_text("chain.py proxy")
    page.locator("#chain a", has_text="hop 2 (agent, capture ").click()
    expect(page.locator("#chain strong")).to_have_text("hop 2 (agent)")
    expect(page.locator("#capture-head h1")).to_contain_text("acp_proxy.demo.agent")

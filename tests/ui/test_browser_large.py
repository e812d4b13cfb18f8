"""The inspector in a real browser on captures past the server's fold limit (lowered to
three frames, ``ACP_PROXY_UI_FOLD_MAX``, rather than recording a hundred thousand): the
files tab, the messages between sessions, the MCP calls of the tools tab and the state at
a frame are shown, folded from the frames or the parts they need, as on a small capture."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from support.paths import DATA
from support.proc import PROXY
from support.ui import playwright_sync_api, request, ui_server

pytestmark = pytest.mark.browser
sync_api = playwright_sync_api()  # skips this module where playwright is not installed

expect = sync_api.expect


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Capture 1: v2 subagents; 2: MCP over ACP; 3: v2 diffs."""
    d = tmp_path_factory.mktemp("ui-large")
    d.chmod(0o700)
    db = d / "large.sqlite"
    for name in ("v2-subagents", "v1-mcp-over-acp", "v2-diffs"):
        path = DATA / "reconstruct" / f"{name}.jsonl"
        subprocess.run([*PROXY, "import", "--db", str(db), str(path)], check=True,
                       capture_output=True, timeout=60)  # fmt: skip
    with ui_server(db, env={"ACP_PROXY_UI_FOLD_MAX": "3"}) as u:
        yield u


def _nothing_refused(page: Any) -> None:
    assert "too large to fold" not in page.locator("#app").inner_text()


def test_the_captures_are_past_the_limit(url: str) -> None:
    status, _, body = request(url, "/api/captures/3/export/html")  # it needs the whole fold
    assert status == 400 and b"too large to fold here (17 frames" in body, body
    assert b"use acp-proxy export 3 --format html" in body, body  # what to run instead


def test_files_messages_and_mcp_calls_past_the_fold_limit(page: Any, url: str) -> None:
    page.goto(url + "#/c/3/files")
    card = page.locator("#view .card", has_text="/home/u/proj/src/config.json")
    expect(card).to_contain_text("modify (diff)")
    expect(page.locator("#view .card h2", has_text="/home/u/proj/NEW.md")).to_be_visible()
    _nothing_refused(page)
    page.goto(url + "#/c/1/sessions")
    child = page.locator("#sessions li.session ul.tree li.session #item-child")
    expect(child.locator("ul.messages li")).to_have_text(["#12 parent → child: run cargo test"])
    _nothing_refused(page)
    page.goto(url + "#/c/2/tools")
    rows = page.locator("#mcp tr")
    expect(rows).to_have_count(6)  # the header and five calls
    expect(rows.nth(1)).to_contain_text("tools/call open_file")
    _nothing_refused(page)


def test_the_state_at_a_frame_past_the_fold_limit(page: Any, url: str) -> None:
    page.goto(url + "#/c/3/f/15")
    page.locator("#state-button").click()
    state = page.locator("#state-box")
    expect(state.locator("h2").first).to_have_text("What the user had seen after #15")
    for title in ("Turns", "Tool calls", "Terminals", "Files", "Sessions"):
        expect(state.locator("h3", has_text=title)).to_be_visible()
    expect(state.locator(".card h2", has_text="/home/u/proj/src/config.json")).to_be_visible()
    expect(state.locator(".card", has_text="Edit config").first).to_be_visible()
    assert "too large to fold" not in state.inner_text()


def test_the_exports_of_the_whole_fold_say_what_to_run_instead(page: Any, url: str) -> None:
    page.goto(url + "#/c/3")
    exports = page.locator("#capture-head .exports")
    expect(exports.locator("a")).to_have_text(["JSONL (exact bytes)"])  # the bytes: any size
    for fmt, label in (("html", "HTML page"), ("patch", "patch"), ("asciicast", "asciicast")):
        refused = exports.locator(".refused", has_text=label)
        expect(refused).to_have_attribute(
            "title", f"too large to fold here: run acp-proxy export 3 --format {fmt}"
        )

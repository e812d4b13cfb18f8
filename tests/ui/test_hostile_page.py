"""A recording full of markup, script and remote URLs, shown in a real browser: nothing of
it runs, nothing is loaded from anywhere but the server, and every string is shown as the
text it is."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from support.hostile import EVIL, hostile_session, record_script
from support.ui import launch, playwright_sync_api, ui_server

pytestmark = pytest.mark.browser
sync_api = playwright_sync_api()  # skips this module where playwright is not installed

expect = sync_api.expect

# markup that would run or load something, were it ever parsed as HTML
HTML = (
    '</script><script>alert("s")</script><img src="http://198.51.100.7/x.png" '
    "onerror=\"alert('e')\"><a href=\"javascript:alert('j')\">j</a>"
    '<iframe src="https://example.invalid/"></iframe><style>@import "http://198.51.100.7/c";'
    "</style><svg onload=alert(1)>"
)


def _steps(cwd: str) -> list[Any]:
    steps = []
    for where, message in hostile_session(cwd):
        if isinstance(message, dict):  # every EVIL string becomes markup
            message = json.loads(
                json.dumps(message).replace(json.dumps(EVIL)[1:-1], HTML.replace('"', '\\"'))
            )
        steps.append((where, message))
    steps.append(("a2c", HTML + " \xff not json"))
    return steps


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    d = tmp_path_factory.mktemp("ui-hostile")
    d.chmod(0o700)
    db = d / "hostile.sqlite"
    r = record_script(db, d, _steps(str(d)))
    assert r.returncode == 0, r.stderr
    with ui_server(db) as u:
        yield u


def test_hostile_recording_runs_nothing_and_loads_nothing(served: str) -> None:
    with sync_api.sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page()
        dialogs: list[str] = []
        foreign: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.on(
            "request",
            lambda r: None if r.url.startswith(served.rstrip("/")) else foreign.append(r.url),
        )
        page.on("console", lambda m: None)
        page.goto(served)
        expect(page.locator("#captures tr")).to_have_count(1)
        expect(page.locator("#captures")).to_contain_text("editor</script>")
        views = ["f", "stats", "log", "turns", "tools", "permissions", "terminals", "diffs"]
        views += ["files", "sessions"]
        for view in views:
            page.goto(served + f"#/c/1/{view}")
            page.wait_for_load_state("networkidle")
            view_box = page.locator("#view")
            view_box.or_(page.locator("#app > p.odd")).first.wait_for(timeout=20_000)
            assert view_box.count() == 1, f"#/c/1/{view}: {page.locator('#app').inner_text()}"
            expect(view_box).not_to_be_empty(timeout=20_000)
        page.goto(served + "#/c/1/f/0")
        expect(page.locator("#frame-detail")).to_contain_text("<script>alert")
        rows = page.locator("#frames tr")
        for i in range(rows.count()):
            rows.nth(i).click()
            expect(page.locator("#frame-detail")).to_contain_text(f"Frame #{i}")
            if i % 4 == 0:  # the state after it, drawn as the tabs draw it
                page.locator("#state-button").click()
                expect(page.locator("#state-box h3").first).to_be_visible()
        # a filter of peer text, kept in the address and read back from it
        page.goto(served + "#/c/1/f?filter=" + "%22%3Cscript%3Ealert%22%20or%20%2F%3Cimg%2F")
        page.reload()
        expect(page.locator("#frames tr").first).to_be_visible()
        page.keyboard.press("?")
        expect(page.locator("#help")).to_be_visible()
        page.goto(served + "#/search/alert")
        expect(page.locator(".hit").first).to_be_visible()
        page.wait_for_load_state("networkidle")
        # the markup is text on the page, never elements
        assert page.locator("main img, main iframe, main script, main svg, main style").count() == 0
        assert page.locator("main a[href^='javascript']").count() == 0
        html = page.content()
        assert "<script>alert" not in html and "&lt;script&gt;alert" in html
        browser.close()
    assert dialogs == []
    assert foreign == []

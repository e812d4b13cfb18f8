"""The inspector in a real browser (the system's Chromium through Playwright): the demo
capture's pages, filters, search, and a capture that grows while the page is open."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.demo import demo_database
from support.proc import PROXY, wait_recorded
from support.ui import playwright_sync_api, ui_server

pytestmark = pytest.mark.browser
sync_api = playwright_sync_api()  # skips this module where playwright is not installed

expect = sync_api.expect


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("ui-browser")
    d.chmod(0o700)
    db = d / "demo.sqlite"
    return demo_database(db)


@pytest.fixture(scope="module")
def url(demo_db: Path) -> Iterator[str]:
    with ui_server(demo_db) as u:
        yield u


def test_captures_list(page: Any, url: str) -> None:
    page.goto(url)
    row = page.locator("#captures tr").first
    expect(row).to_contain_text("demo-client 1.0.0 ⇄ demo-agent 1.0.0")
    expect(row).to_contain_text("exit 0")
    expect(row).to_contain_text("v1")
    expect(page.locator("#live")).to_have_text("live")


def test_timeline_and_frame_detail(page: Any, url: str) -> None:
    page.goto(url + "#/c/1")
    rows = page.locator("#frames tr")
    expect(rows.first).to_contain_text("initialize")
    assert rows.count() == 46
    rows.first.click()
    detail = page.locator("#frame-detail")
    expect(detail).to_contain_text("Frame #0")
    expect(detail.locator("#pretty")).to_contain_text('"method": "initialize"')  # the JSON tree
    expect(detail).to_contain_text("response #1")
    # keyboard: down arrow and Enter open the next frame
    page.locator('#frames tr[data-seq="0"]').focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    expect(page.locator("#frame-detail")).to_contain_text("Frame #1")
    assert page.url.endswith("#/c/1/f/1")
    page.locator("#frame-detail a", has_text="request #0").click()
    expect(page.locator("#frame-detail")).to_contain_text("Frame #0")


def test_a_tool_call_and_its_deep_link(page: Any, url: str) -> None:
    page.goto(url + "#/c/1/tools/call_edit")
    card = page.locator("#item-call_edit")
    expect(card).to_contain_text("Enable debug in config.json")
    expect(card).to_contain_text("completed")
    expect(card).to_contain_text("in_progress #12 → completed #15")
    expect(card).to_have_class("card target")


def test_terminal_screen(page: Any, url: str) -> None:
    page.goto(url + "#/c/1/terminals")
    scr = page.locator("pre.screen").first
    expect(scr).to_have_text("collecting 3 tests\n3 passed in 0.03s")
    assert "\x1b" not in scr.text_content()


def test_diff_is_coloured_and_says_so_in_text(page: Any, url: str) -> None:
    page.goto(url + "#/c/1/diffs")
    added = page.locator("pre.patch span.add").first
    removed = page.locator("pre.patch span.del").first
    expect(added).to_have_text('+  "debug": true,')
    expect(removed).to_have_text('-  "debug": false,')
    colour = added.evaluate("e => getComputedStyle(e).color")
    assert colour != removed.evaluate("e => getComputedStyle(e).color")
    assert colour != page.locator("pre.patch").first.evaluate("e => getComputedStyle(e).color")


def test_filters(page: Any, url: str) -> None:
    page.goto(url + "#/c/1")
    rows = page.locator("#frames tr")
    expect(rows.first).to_contain_text("initialize")
    total = rows.count()
    page.fill("#filter", "kind:response dir:a2c")
    page.press("#filter", "Enter")
    expect(rows.first).to_contain_text("response")
    kinds = rows.locator("td:nth-child(4)").all_text_contents()
    dirs = rows.locator("td:nth-child(3)").all_text_contents()
    assert 0 < len(kinds) < total and set(kinds) == {"response"} and set(dirs) == {"← a2c"}
    assert "filter=kind%3Aresponse" in page.url  # kept in the address: a view to share
    page.fill("#filter", "method:fs/* or update:plan")
    page.press("#filter", "Enter")
    expect(rows.first).to_contain_text("plan")
    methods = rows.locator("td:nth-child(5)").all_text_contents()
    assert methods and all(m.startswith(("fs/", "plan")) for m in methods), methods
    # the address alone opens the same view
    page.goto(url + "#/c/1/f?filter=" + "not%20dir%3Ac2a%20-kind%3Anotification")
    page.reload()
    expect(rows.first).to_contain_text("←")
    assert set(rows.locator("td:nth-child(3)").all_text_contents()) == {"← a2c"}
    assert "notification" not in rows.locator("td:nth-child(4)").all_text_contents()
    page.fill("#filter", "kind:nonsense")
    page.press("#filter", "Enter")
    expect(page.locator("#filter-error")).to_contain_text("column 1")


def test_search_jumps_to_the_frame(page: Any, url: str) -> None:
    page.goto(url)
    page.fill("#search-input", "write_text_file")
    page.press("#search-input", "Enter")
    hit = page.locator(".hit a").first
    expect(hit).to_contain_text("capture 1 · #")
    seq = int(hit.text_content().split("#")[1])
    hit.click()
    detail = page.locator("#frame-detail")
    expect(detail).to_contain_text(f"Frame #{seq}")
    expect(detail.locator("#pretty mark").first).to_have_text("write_text_file")
    expect(page.locator(f'#frames tr[data-seq="{seq}"]')).to_have_attribute("aria-selected", "true")


ECHO = "import sys\nfor line in sys.stdin:\n    print(line, end='', flush=True)\n"


def test_live_frames_appear_while_another_process_records(
    page: Any, url: str, demo_db: Path
) -> None:
    page.goto(url)
    expect(page.locator("#captures tr")).to_have_count(1)
    proc = subprocess.Popen(
        [*PROXY, "record", "--db", str(demo_db), "--label", "live-one", "--", sys.executable,
         "-c", ECHO],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    try:

        def say(word: str) -> None:
            line = b'{"jsonrpc":"2.0","method":"live/' + word.encode() + b'"}\n'
            proc.stdin.write(line)  # type: ignore[union-attr]
            proc.stdin.flush()  # type: ignore[union-attr]
            assert proc.stdout.readline() == line  # type: ignore[union-attr]

        say("first")
        new = page.locator('#captures tr[data-id="2"]')
        expect(new).to_contain_text("live-one", timeout=5000)
        expect(new).to_contain_text("● live")
        new.locator("a").first.click()
        rows = page.locator("#frames tr")
        expect(rows).to_have_count(2)
        t0 = time.monotonic()
        say("second")
        expect(rows).to_have_count(4, timeout=5000)
        expect(rows.nth(2)).to_contain_text("live/second")
        seen_after = time.monotonic() - t0
        say("third")
        expect(rows.nth(4)).to_contain_text("live/third", timeout=5000)
        expect(page.locator("#capture-count")).to_have_text("6 frames")
        # the page did not reload: the row clicked before is still the same element
        assert page.evaluate("performance.getEntriesByType('navigation').length") == 1
        print(f"live frame shown {seen_after:.2f} s after it was written")
    finally:
        proc.stdin.close()
        proc.wait(30)
        wait_recorded(demo_db)
    expect(page.locator("#capture-live")).to_have_count(0, timeout=5000)


@pytest.fixture(scope="module")
def cause_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from support.cause import failing_capture

    d = tmp_path_factory.mktemp("ui-cause")
    d.chmod(0o700)
    db = d / "cause.sqlite"
    failing_capture(db, d)
    with ui_server(db) as u:
        yield u


def test_a_failed_capture_shows_the_agents_own_words(page: Any, cause_url: str) -> None:
    """The cause of an Internal error is only on the agent's stderr: the capture page shows
    it, in its colours (our classes), the log tab has it beside the events, the failed turn
    says its error, and search finds it."""
    from support.cause import SECRET, UNIQUE

    page.goto(cause_url + "#/c/1")
    last = page.locator("#last-stderr")
    expect(last).to_contain_text(UNIQUE)
    expect(last.locator("span.f1.sb")).to_have_text("ERROR")
    assert "\x1b" not in last.inner_text()
    page.locator("nav.tabs a", has_text="log").click()
    log = page.locator("#log")
    expect(log).to_contain_text(UNIQUE)
    expect(log).to_contain_text("agent started")
    expect(log).to_contain_text("agent exited 0")
    page.locator("nav.tabs a", has_text="turns").click()
    expect(page.locator(".turn-error")).to_contain_text(
        f"error -32603 Internal error: {UNIQUE} query failed"
    )
    page.fill("#search-input", "root/sudo")
    page.press("#search-input", "Enter")
    hit = page.locator(".hit.stderr").first
    expect(hit).to_contain_text("agent stderr")
    expect(hit.locator("mark")).to_have_text("root/sudo")
    assert SECRET in hit.inner_text()  # the inspector is local: it shows what was recorded


def test_a_captures_event_while_the_list_loads_never_covers_a_later_page(
    page: Any, url: str
) -> None:
    # The live stream's first event comes while the first list is still loading; the list
    # it asks for again must not land on top of the page the user went to meanwhile.
    held: list[Any] = []
    asked = [0]

    def captures(route: Any) -> None:
        asked[0] += 1
        if asked[0] == 1:
            time.sleep(1)  # the first list: slow, so the live event comes before it
            route.continue_()
        elif asked[0] == 2:
            held.append(route)  # the list asked for again: held until the user moved on
        else:
            route.continue_()

    page.route("**/api/captures", captures)
    page.goto(url)
    expect(page.locator("#captures tr").first).to_be_visible()
    page.goto(url + "#/c/1/turns")
    deadline = time.monotonic() + 10
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    for route in held:
        with page.expect_response("**/api/captures"):
            route.continue_()
    expect(page.locator("#view")).to_contain_text("Turn on debug mode")
    page.wait_for_timeout(300)  # anything still queued has rendered by now
    expect(page.locator("#view")).to_contain_text("Turn on debug mode")
    assert held, "the live event never asked for the list again: the race was not set up"

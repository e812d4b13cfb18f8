"""The timeline in a real browser at 1400×900: one line a frame with the detail beside the
list (element boxes), the waterfall's geometry, the keys, sorting, the JSON tree, the state
at a frame, the stats tab, and follow mode on a capture being recorded."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.demo import demo_database
from support.proc import PROXY, wait_recorded
from support.ui import playwright_sync_api, ui_server

pytestmark = pytest.mark.browser
PAGE_WIDTH = 1400  # the layout is checked at 1400×900 (the browser fixtures: conftest.py)
sync_api = playwright_sync_api()  # skips this module where playwright is not installed

expect = sync_api.expect


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("ui-timeline")
    d.chmod(0o700)
    return demo_database(d / "demo.sqlite")


@pytest.fixture(scope="module")
def url(demo_db: Path) -> Iterator[str]:
    with ui_server(demo_db) as u:
        yield u


def api(url: str, path: str) -> Any:
    with urllib.request.urlopen(url.rstrip("/") + path, timeout=10) as r:
        return json.loads(r.read())


def box(page: Any, selector: str) -> dict[str, float]:
    found: dict[str, float] = page.locator(selector).first.bounding_box()
    return found


def test_one_line_a_frame_and_the_detail_beside_the_list(page: Any, url: str) -> None:
    page.goto(url + "#/c/1/f/4")
    expect(page.locator("#frame-detail")).to_contain_text("Frame #4")
    rows = page.locator("#frames tr")
    heights = {round(b["height"]) for b in (r.bounding_box() for r in rows.all())}
    assert max(heights) <= 20 and len(heights) == 1, heights  # none wraps to two lines
    listed, detail = box(page, "#list"), box(page, "#detail")
    assert listed["x"] + listed["width"] <= detail["x"]  # side by side, never on top
    assert detail["x"] + detail["width"] <= 1400 and listed["y"] + listed["height"] <= 900
    visible = page.evaluate(
        """() => { const l = document.getElementById('list').getBoundingClientRect();
        return [...document.querySelectorAll('#frames tr')].filter((r) => {
          const b = r.getBoundingClientRect();
          return b.top >= l.top && b.bottom <= l.bottom; }).length; }"""
    )
    assert visible >= 35 or visible == rows.count(), visible
    # the anomalies column is in the list (scrolled to, not covered by the detail)
    page.locator("#list").evaluate("l => { l.scrollLeft = l.scrollWidth; }")
    last = box(page, "#frame-table th[data-col=anomalies]")
    assert last["x"] + last["width"] <= detail["x"] + 1


def test_the_waterfall_draws_each_request_to_its_answer(page: Any, url: str) -> None:
    span = api(url, "/api/captures/1")["span_ms"]
    frames = api(url, "/api/captures/1/frames?limit=1000")["frames"]
    slow = max(
        (f for f in frames if f["kind"] == "request" and f.get("end_ms") is not None),
        key=lambda f: f["end_ms"] - f["t_ms"],
    )
    page.goto(url + "#/c/1")
    track = box(page, f'#frames tr[data-seq="{slow["seq"]}"] .track')
    bar = box(page, f'#frames tr[data-seq="{slow["seq"]}"] .bar')
    left = track["x"] + track["width"] * slow["t_ms"] / span
    width = track["width"] * (slow["end_ms"] - slow["t_ms"]) / span
    assert abs(bar["x"] - left) < 1.0 and abs(bar["width"] - width) < 1.0, (bar, left, width)
    answer = box(page, f'#frames tr[data-seq="{slow["answer_seq"]}"] .bar')
    assert abs(answer["x"] - bar["x"]) < 1.0 and abs(answer["width"] - bar["width"]) < 1.0


def test_the_keys(page: Any, url: str) -> None:
    page.goto(url + "#/c/1")
    expect(page.locator("#frames tr").first).to_be_visible()
    page.keyboard.press("Tab")  # the first stop skips to the frames
    expect(page.locator("#skip")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#frames tr").first).to_be_focused()
    page.keyboard.press("/")
    expect(page.locator("#filter")).to_be_focused()
    page.keyboard.press("Escape")
    page.keyboard.press("?")
    expect(page.locator("#help")).to_contain_text("method:")
    page.keyboard.press("Escape")
    expect(page.locator("#help")).to_have_count(0)
    page.keyboard.press("g")
    page.keyboard.type("20")
    page.keyboard.press("Enter")
    expect(page.locator("#frame-detail")).to_contain_text("Frame #20")
    assert page.url.endswith("#/c/1/f/20")
    page.keyboard.press("j")
    expect(page.locator("#frame-detail")).to_contain_text("Frame #21")
    page.keyboard.press("k")
    page.keyboard.press("k")
    expect(page.locator("#frame-detail")).to_contain_text("Frame #19")
    expect(page.locator('#frames tr[data-seq="19"]')).to_be_focused()
    page.keyboard.press("j")
    page.keyboard.press("Enter")
    expect(page.locator("#frame-detail")).to_contain_text("Frame #20")


def test_a_column_sorts(page: Any, url: str) -> None:
    frames = api(url, "/api/captures/1/frames?limit=1000")["frames"]
    slowest = max((f for f in frames if f["latency_ms"] is not None), key=lambda f: f["latency_ms"])
    page.goto(url + "#/c/1")
    expect(page.locator("#frames tr").first).to_be_visible()
    page.locator("#frame-table th[data-col=latency] button").click()
    page.locator("#frame-table th[data-col=latency] button").click()  # descending
    th = page.locator("#frame-table th[data-col=latency]")
    expect(th).to_have_attribute("aria-sort", "descending")
    expect(page.locator("#frames tr").first).to_have_attribute("data-seq", str(slowest["seq"]))
    page.locator("#frame-table th[data-col=latency] button").click()  # back to seq order
    expect(page.locator("#frames tr").first).to_have_attribute("data-seq", "0")


def test_the_json_tree_the_state_at_a_frame_and_stats(page: Any, url: str) -> None:
    page.goto(url + "#/c/1/f/4")
    tree = page.locator("#pretty")
    expect(tree).to_contain_text('"sessionId": "sess_demo_1"')
    tree.locator(".jleaf", has_text='"sessionId"').first.click()
    expect(page.locator("#json-path")).to_have_text("$.params.sessionId")
    tree.locator("details > summary").first.click()  # folds the whole object
    expect(tree.locator(".jkids").first).to_be_hidden()
    page.goto(url + "#/c/1/f/36")
    page.locator("#state-button").click()
    state = page.locator("#state-box")
    expect(state.locator("h3", has_text="Turns")).to_be_visible()
    expect(state.locator(".card", has_text="Turn on debug mode").first).to_be_visible()
    expect(state.locator("pre.screen").first).to_contain_text("passed")
    assert "[object" not in state.inner_text()
    page.locator("nav.tabs a", has_text="stats").click()
    methods = page.locator("#stats-methods")
    expect(methods).to_contain_text("session/prompt")
    expect(methods).to_contain_text("ms")


def test_stderr_and_events_in_lanes_of_their_own(page: Any, url: str) -> None:
    page.goto(url + "#/c/1/f/0")
    expect(page.locator("#frame-detail")).to_contain_text("Frame #0")
    assert page.locator("#frames tr.note").count() == 0  # off until asked for
    page.check("#lane-event")
    first = page.locator("#frames tr").first
    expect(first).to_have_class("note event")
    expect(first).to_contain_text("agent started")
    ends = page.locator("#frames tr.note.event", has_text="agent exited")
    expect(ends).to_have_count(1)
    spawn_t = float(first.locator("td:nth-child(2)").inner_text())
    assert spawn_t < float(page.locator("#frames tr.frame td:nth-child(2)").first.inner_text())
    page.locator('#frames tr[data-seq="0"]').focus()
    page.keyboard.press("j")  # the keys move over frames only
    expect(page.locator("#frame-detail")).to_contain_text("Frame #1")
    page.uncheck("#lane-event")
    expect(page.locator("#frames tr.note")).to_have_count(0)


ECHO = "import sys\nfor line in sys.stdin:\n    print(line, end='', flush=True)\n"


def test_follow_mode_on_a_capture_being_recorded(page: Any, url: str, demo_db: Path) -> None:
    proc = subprocess.Popen(
        [*PROXY, "record", "--db", str(demo_db), "--label", "follow", "--", sys.executable,
         "-c", ECHO],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    n = [0]

    def say(count: int) -> None:
        for _ in range(count):
            n[0] += 1
            line = b'{"jsonrpc":"2.0","method":"live/n%d"}\n' % n[0]
            proc.stdin.write(line)  # type: ignore[union-attr]
            proc.stdin.flush()  # type: ignore[union-attr]
            assert proc.stdout.readline() == line  # type: ignore[union-attr]

    at_end = "l => l.scrollHeight - l.scrollTop - l.clientHeight < 4"
    try:
        say(30)
        deadline = time.monotonic() + 10
        while not (ids := [c["id"] for c in api(url, "/api/captures") if c["label"] == "follow"]):
            assert time.monotonic() < deadline, "the capture being recorded is not listed"
            time.sleep(0.05)
        cid = ids[0]
        page.goto(url + f"#/c/{cid}")
        rows = page.locator("#frames tr")
        expect(rows.last).to_contain_text("live/n30", timeout=5000)
        expect(page.locator("#follow")).to_be_checked()
        say(40)  # more than a screen: followed, the newest row is in view
        expect(rows.last).to_contain_text("live/n70", timeout=5000)
        page.wait_for_function(f"({at_end})(document.getElementById('list'))", timeout=5000)
        page.locator("#list").hover()
        page.mouse.wheel(0, -400)  # the user scrolls up: following stops
        expect(page.locator("#follow")).not_to_be_checked()
        top = page.locator("#list").evaluate("l => l.scrollTop")
        say(10)
        expect(rows.last).to_contain_text("live/n80", timeout=5000)
        assert page.locator("#list").evaluate("l => l.scrollTop") == top
        page.locator("#follow").check()  # and the toggle brings it back
        say(5)
        expect(rows.last).to_contain_text("live/n85", timeout=5000)
        page.wait_for_function(f"({at_end})(document.getElementById('list'))", timeout=5000)
    finally:
        proc.stdin.close()
        proc.wait(30)
        wait_recorded(demo_db)

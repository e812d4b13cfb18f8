"""The HTML page as a debugging report: stderr and events, tool-call content, terminals in
their colours, links to frames, and a big capture that stays a small page."""

from __future__ import annotations

import html.parser
import re
import subprocess
from pathlib import Path

import pytest
from support.big import record_flood
from support.crash import record_crash
from support.demo import demo_database
from support.proc import PROXY


class _Ids(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name == "id" and value:
                self.ids.add(value)
            if name == "href" and value:
                self.hrefs.append(value)


def export(db: Path, out: Path, *extra: str) -> str:
    r = subprocess.run(
        [*PROXY, "export", "--db", str(db), "--format", "html", "-o", str(out), *extra],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    return out.read_text()


def _section(page: str, title: str) -> str:
    return page.split(f"<h2>{title}")[1].split("<h2>")[0]


@pytest.fixture(scope="module")
def demo_page(tmp_path_factory: pytest.TempPathFactory) -> str:
    tmp = tmp_path_factory.mktemp("demo")
    db = tmp / "rec.sqlite"
    demo_database(db)
    return export(db, tmp / "demo.html")


def test_stderr_events_and_a_cut_short_turn(tmp_path: Path) -> None:
    db = tmp_path / "rec.sqlite"
    record_crash(db)
    page = export(db, tmp_path / "c.html")
    stderr = _section(page, "Agent stderr")
    assert "RuntimeError: boom" in stderr and "agent starting" in stderr
    events = _section(page, "Events")
    assert "<tr class=err>" in events and "exit" in events  # exit 3 stands out
    turns = _section(page, "Turns")
    assert "cut short: agent exited 3 before answering" in turns and "<tr class=err>" in turns
    frames = _section(page, "Frames")
    assert "unanswered" in frames


def test_tool_calls_show_their_content_and_link_to_frames(demo_page: str) -> None:
    tools = _section(demo_page, "Tool calls")
    edit = tools.split("Enable debug in config.json")[1].split("<div class=card>")[0]
    assert '<span class="add">+  &quot;debug&quot;: true,</span>' in edit  # its diff
    test = tools.split("Run the tests")[1].split("<div class=card>")[0]
    assert '<pre class="screen">' in test and "3 passed" in test  # its terminal
    read = tools.split("Read config.json")[1].split("<div class=card>")[0]
    assert "<pre>" in read  # its text content
    parser = _Ids()
    parser.feed(demo_page)
    assert parser.hrefs and all(h.startswith("#f") for h in parser.hrefs)
    assert {h[1:] for h in parser.hrefs} <= parser.ids  # every link has its frame
    turns = _section(demo_page, "Turns")
    assert '<a href="#f4">#4</a>' in turns  # turn 1 starts at frame 4


def test_terminals_show_the_full_command_and_their_colours(demo_page: str) -> None:
    terms = _section(demo_page, "Terminals")
    assert "-c" in terms and "import sys,time" in terms  # the arguments, not just argv[0]
    assert '<span class="f2">3 passed</span>' in terms  # green, as the agent's test run was
    screens = re.findall(r'<pre class="screen">(.*?)</pre>', demo_page, re.S)
    assert screens and all("[32m" not in s and "\x1b" not in s for s in screens)
    assert "\x1b" not in demo_page  # no raw escape anywhere on the page


def test_permissions_and_plan_sections(demo_page: str) -> None:
    perms = _section(demo_page, "Permissions")
    assert "Run the tests" in perms and "selected allow" in perms
    plan = _section(demo_page, "Plan")
    assert "Run the tests" in plan or "tests" in plan


def test_frame_text_wraps_and_errors_stand_out(demo_page: str) -> None:
    css = demo_page.split("<style>")[1].split("</style>")[0]
    assert re.search(r"pre\{[^}]*white-space:pre-wrap", css)
    assert "overflow-wrap:anywhere" in css


def test_a_big_capture_is_a_small_page_with_its_next_pages(tmp_path: Path) -> None:
    db = tmp_path / "big.sqlite"
    record_flood(db, 20_000, size=400)
    page = export(db, tmp_path / "p1.html", "--max-frames", "3000")
    assert len(page) < 4_000_000  # every frame's bytes would be 8 MB of text, escaped more
    assert "Frames #0–#2999 of 20000" in page
    assert "--from 3000 -o next.html" in page and "show 1 --from 3000" in page
    runs = re.findall(r"<tr class=run id=\"f(\d+)\">.*?<td>(\d+)×</td>", page)
    assert runs and sum(int(n) for _, n in runs) == 3000  # the chunks, collapsed
    nxt = export(db, tmp_path / "p2.html", "--from", "3000", "--max-frames", "3000")
    assert "Frames #3000–#5999 of 20000" in nxt and 'id="f3000"' in nxt
    assert 'id="f2999"' not in nxt
    last = export(db, tmp_path / "p7.html", "--from", "18000", "--max-frames", "3000")
    assert "Frames #18000–#19999 of 20000" in last and "not on this page" not in last

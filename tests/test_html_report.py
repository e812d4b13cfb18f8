"""The HTML page of a capture: self-contained, escaped, and showing what the views show."""

from __future__ import annotations

import html.parser
import subprocess
from pathlib import Path

from conftest import PROXY, peer, run_proxy


class _Page(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []
        self.external: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name in ("src", "href") and value:
                self.external.append(value)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _page(db: Path, tmp_path: Path) -> tuple[_Page, str]:
    out = tmp_path / "c.html"
    subprocess.run(
        [*PROXY, "export", "--db", str(db), "--format", "html", "-o", str(out)],
        check=True,
        capture_output=True,
    )
    source = out.read_text()
    page = _Page()
    page.feed(source)
    return page, source


def test_demo_page_shows_turns_tools_terminals_diffs_and_frames(db: Path, tmp_path: Path) -> None:
    subprocess.run([*PROXY, "demo", "--db", str(db)], check=True, capture_output=True)
    page, _ = _page(db, tmp_path)
    text = "".join(page.text)
    for heading in ("Turns", "Tool calls", "Terminals", "File changes", "Frames (46)"):
        assert heading in text
    assert "3 passed in 0.03s" in text  # the terminal's screen, after its \r redraws
    assert "running test 3/3" not in text.split("Terminals")[1].split("File changes")[0]
    assert '+  "debug": true,' in text and "Enable debug in config.json" in text
    assert page.external == [] and "script" not in page.tags


def test_hostile_frames_are_escaped(db: Path, tmp_path: Path) -> None:
    src = tmp_path / "out.bin"
    src.write_bytes(
        b'<script>alert(1)</script>\n{"jsonrpc":"2.0","method":"</td><b>x"}\n\xff\xfe\n'
    )
    run_proxy(db, peer("echo_agent.py", str(tmp_path / "in.bin"), str(src)))
    page, source = _page(db, tmp_path)
    assert "script" not in page.tags and "b" not in page.tags
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in source
    assert "\\xff\\xfe" in "".join(page.text)

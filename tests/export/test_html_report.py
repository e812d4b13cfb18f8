"""The HTML page of a capture: self-contained, escaped, and showing what the views show."""

from __future__ import annotations

import html.parser
import re
import subprocess
from pathlib import Path

from support.proc import PROXY, peer, run_proxy


class _Page(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []
        self.external: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name in ("src", "href") and value and not value.startswith("#"):
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


def test_demo_page_shows_turns_tools_terminals_diffs_and_frames(
    demo_copy: Path, tmp_path: Path
) -> None:
    db = demo_copy
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


class _Strict(html.parser.HTMLParser):
    """Every tag, attribute and style element of a page, and its text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.style: list[str] = []
        self.text: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        (self.style if self._in_style else self.text).append(data)


HOSTILE = [
    "</script><script>alert(1)</script>",
    '<img src=x onerror="alert(2)">',
    '<a href="javascript:alert(3)">click</a>',
    "</style><style>body{background:url(https://evil.example/x)}</style>",
    '<meta http-equiv="refresh" content="0;url=https://evil.example">',
    "javascript:alert(4)",
]
OURS = {
    "html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "p", "main",
    "table", "tr", "th", "td", "div", "b", "code", "span", "br", "pre", "details", "summary",
    "a",
}  # fmt: skip


def test_page_has_a_policy_that_forbids_scripts_and_loads(demo_copy: Path, tmp_path: Path) -> None:
    import base64
    import hashlib

    db = demo_copy
    _, source = _page(db, tmp_path)
    page = _Strict()
    page.feed(source)
    metas = [dict(a) for t, a in page.tags if t == "meta"]
    (csp,) = [m["content"] for m in metas if m.get("http-equiv") == "Content-Security-Policy"]
    assert csp is not None
    rules = dict(r.strip().split(" ", 1) for r in csp.split(";"))
    assert rules["default-src"] == "'none'"  # scripts, images, fonts, connections: none
    assert "script-src" not in rules and "unsafe" not in csp and "http" not in csp
    assert rules["base-uri"] == "'none'" and rules["form-action"] == "'none'"
    (style,) = page.style
    digest = base64.b64encode(hashlib.sha256(style.encode()).digest()).decode()
    assert rules["style-src"] == f"'sha256-{digest}'"  # our stylesheet, nothing else
    head = source.split("<style>", 1)[0]
    assert "Content-Security-Policy" in head  # before anything the policy governs


def test_hostile_strings_stay_inert_text(db: Path, tmp_path: Path) -> None:
    from support.hostile import record_script

    sid = "s" + HOSTILE[0]
    rpc = {"jsonrpc": "2.0"}
    steps = [
        ("c2a", {**rpc, "id": 0, "method": "initialize",
                 "params": {"protocolVersion": 1, "clientInfo": {"name": HOSTILE[1]}}}),
        ("a2c", {**rpc, "id": 0, "result": {"protocolVersion": 1,
                                            "agentInfo": {"name": HOSTILE[2]}}}),
        ("c2a", {**rpc, "id": 1, "method": "session/new", "params": {"cwd": "/w"}}),
        ("a2c", {**rpc, "id": 1, "result": {"sessionId": sid}}),
        ("c2a", {**rpc, "id": 2, "method": "session/prompt",
                 "params": {"sessionId": sid, "prompt": [{"type": "text", "text": HOSTILE[3]}]}}),
        ("a2c", {**rpc, "method": "session/update", "params": {"sessionId": sid, "update": {
            "sessionUpdate": "tool_call", "toolCallId": HOSTILE[4], "title": HOSTILE[0],
            "kind": HOSTILE[5], "status": "completed",
            "locations": [{"path": HOSTILE[2]}],
            "content": [{"type": "diff", "path": "/w/" + HOSTILE[1], "oldText": HOSTILE[3],
                         "newText": HOSTILE[5]}]}}}),
        ("a2c", {**rpc, "id": 5, "method": "terminal/create",
                 "params": {"sessionId": sid, "command": HOSTILE[1], "cwd": HOSTILE[4]}}),
        ("c2a", {**rpc, "id": 5, "result": {"terminalId": HOSTILE[2]}}),
        ("a2c", {**rpc, "id": 6, "method": "terminal/output",
                 "params": {"sessionId": sid, "terminalId": HOSTILE[2]}}),
        ("c2a", {**rpc, "id": 6, "result": {"output": "\n".join(HOSTILE), "truncated": False}}),
        ("a2c", {**rpc, "method": HOSTILE[4], "params": {}}),
        ("a2c", {**rpc, "id": 2, "result": {"stopReason": HOSTILE[5]}}),
        ("a2c", "\n".join(HOSTILE).replace("\n", " ")),
    ]  # fmt: skip
    record_script(db, tmp_path, steps, extra=["--label", HOSTILE[3]])
    _, source = _page(db, tmp_path)
    page = _Strict()
    page.feed(source)
    assert {t for t, _ in page.tags} <= OURS
    attrs = [(t, n, v) for t, a in page.tags for n, v in a]
    assert [x for x in attrs if x[1].startswith("on") or x[1] == "src"] == []
    # links only to the page's own frame rows
    assert all(re.fullmatch(r"#f\d+", v or "") for _t, n, v in attrs if n == "href")
    assert len([t for t, _ in page.tags if t == "style"]) == 1
    assert len([t for t, _ in page.tags if t == "meta"]) == 2  # charset and the policy
    text = "".join(page.text)
    for s in HOSTILE:
        assert s in text  # shown, as text

"""Screenshots of the web inspector's main pages for docs/ui.md, on the demo capture.

usage: python bench/ui_screenshots.py [OUTDIR]   (default docs/images; needs /usr/bin/chromium)

Each page at 1400×900; with pngquant on the PATH the PNGs are cut to 64 colours (tens of
kB instead of hundreds).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
PAGES = [  # file, route, theme, what to do once it is shown (a CSS selector to click, a key)
    ("ui-captures.png", "#/", "light", None),
    ("ui-timeline.png", "#/c/1/f/13", "light", None),
    ("ui-filter.png", "#/c/1/f/4?filter=dir%3Ac2a%20or%20method%3Afs%2F*", "dark", None),
    ("ui-keys.png", "#/c/1", "light", "key:?"),
    ("ui-state.png", "#/c/1/f/36", "light", "#state-button"),
    ("ui-stats.png", "#/c/1/stats", "light", None),
    ("ui-log.png", "#/c/1/log", "dark", None),
    ("ui-turns.png", "#/c/1/turns", "light", None),
    ("ui-permissions.png", "#/c/1/permissions", "light", None),
    ("ui-files.png", "#/c/1/files", "dark", None),
    ("ui-tools.png", "#/c/1/tools/call_edit", "light", None),
    ("ui-terminals.png", "#/c/1/terminals", "dark", None),
    ("ui-diffs.png", "#/c/1/diffs", "dark", None),
    ("ui-sessions.png", "#/c/1/sessions", "light", None),
    ("ui-search.png", "#/search/debug", "light", None),
]


def _shrink(png: Path) -> None:
    """Fewer colours, the same picture: text and flat panels need few."""
    tool = shutil.which("pngquant")
    if tool is not None:
        subprocess.run([tool, "64", "--force", "--skip-if-larger", "--strip", "--output", str(png),
                        str(png)], check=False)  # fmt: skip


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/images")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o700)
        db = Path(tmp) / "demo.sqlite"
        cli = [sys.executable, "-m", "acp_proxy"]
        subprocess.run([*cli, "demo", "--db", str(db)], check=True, capture_output=True)
        proc = subprocess.Popen(
            [*cli, "ui", "--db", str(db), "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE
        )
        assert proc.stdout is not None
        url = proc.stdout.readline().decode().split(" at ")[1].strip()
        try:
            with sync_playwright() as p:
                b = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
                for name, route, theme, act in PAGES:
                    page = b.new_page(viewport={"width": 1400, "height": 900}, color_scheme=theme)  # type: ignore[arg-type]
                    page.goto(url + route)
                    page.wait_for_load_state("networkidle")
                    if act and act.startswith("key:"):
                        page.keyboard.press(act[4:])
                    elif act:
                        page.click(act)
                        page.locator("#state-box h3").first.scroll_into_view_if_needed()
                    page.wait_for_load_state("networkidle")
                    page.wait_for_timeout(300)
                    page.screenshot(path=str(out / name))
                    page.close()
                    _shrink(out / name)
                    print(out / name, f"{(out / name).stat().st_size / 1000:.0f} kB")
                b.close()
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(30)


if __name__ == "__main__":
    main()

"""Screenshots of the web inspector's main pages for docs/ui.md, on the demo capture.

usage: python bench/ui_screenshots.py [OUTDIR]   (default docs/images; needs /usr/bin/chromium)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
PAGES = [
    ("ui-captures.png", "#/", "light"),
    ("ui-timeline.png", "#/c/1/f/13", "light"),
    ("ui-tools.png", "#/c/1/tools/call_edit", "light"),
    ("ui-terminals.png", "#/c/1/terminals", "dark"),
    ("ui-diffs.png", "#/c/1/diffs", "dark"),
    ("ui-search.png", "#/search/debug", "light"),
]


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
                for name, route, theme in PAGES:
                    page = b.new_page(viewport={"width": 1200, "height": 720}, color_scheme=theme)  # type: ignore[arg-type]
                    page.goto(url + route)
                    page.wait_for_load_state("networkidle")
                    page.wait_for_timeout(300)
                    page.screenshot(path=str(out / name))
                    page.close()
                    print(out / name)
                b.close()
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(30)


if __name__ == "__main__":
    main()

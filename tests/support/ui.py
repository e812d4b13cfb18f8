"""Helpers for the web inspector's tests: a real ``acp-proxy ui`` process, raw HTTP
requests (any Host, any Origin) and the system's Chromium driven by Playwright."""

from __future__ import annotations

import http.client
import os
import re
import select
import signal
import subprocess
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from support.proc import PROXY

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@contextmanager
def ui_server(
    db: Path, *extra: str, proxy: Sequence[str] = PROXY, env: Mapping[str, str] | None = None
) -> Iterator[str]:
    """``acp-proxy ui`` on a free loopback port (unless ``extra`` says otherwise); yields
    the URL it printed. ``proxy`` is how acp-proxy is run (an installed script, say);
    ``env`` is added to its environment."""
    args = [*proxy, "ui", "--db", str(db)]
    if "--listen" not in extra:
        args += ["--listen", "127.0.0.1:0"]
    proc = subprocess.Popen(
        [*args, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env={**os.environ, **env} if env else None,
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        line = proc.stdout.readline().decode() if ready else "(nothing in 60 s)"
        m = re.search(r" at (http://\S+)$", line.strip())
        if m is None:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise AssertionError(f"acp-proxy ui did not start: {line!r} {err!r}")
        yield m.group(1)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def request(
    url: str, path: str, headers: dict[str, str] | None = None, method: str = "GET"
) -> tuple[int, dict[str, str], bytes]:
    """One request to the server of ``url`` with exactly these headers (``Host`` included
    when given)."""
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname or "127.0.0.1", u.port or 80, timeout=30)
    try:
        hdrs = dict(headers or {})
        skip = "Host" in hdrs
        conn.putrequest(method, path, skip_host=skip, skip_accept_encoding=True)
        for k, v in hdrs.items():
            conn.putheader(k, v)
        conn.endheaders()
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def playwright_sync_api() -> ModuleType:
    """Playwright's sync API, for a browser test module to call at import. Without
    playwright the module is skipped, saying so, rather than failing to load — unless
    ``ACP_PROXY_REQUIRE_BROWSER`` is set, as CI sets it: there it is an error."""
    import pytest

    try:
        from playwright import sync_api
    except ImportError as e:
        why = f"playwright is not installed ({e}; pip install -e '.[test]')"
        if os.environ.get("ACP_PROXY_REQUIRE_BROWSER"):
            raise ImportError(f"{why}, and ACP_PROXY_REQUIRE_BROWSER is set") from e
        pytest.skip(why, allow_module_level=True)
    return sync_api


def launch(playwright: Any) -> Any:
    """The system's Chromium, headless (no browser download). Without it the browser tests
    are skipped, with how to install it — unless ``ACP_PROXY_REQUIRE_BROWSER`` is set, as CI
    sets it: there a missing browser is a failure, never a silent skip."""
    import pytest

    if not os.access(CHROMIUM, os.X_OK):
        why = f"{CHROMIUM} is not installed (Debian: apt-get install -y chromium)"
        if os.environ.get("ACP_PROXY_REQUIRE_BROWSER"):
            pytest.fail(why)
        pytest.skip(why)
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


@contextmanager
def running_browser() -> Iterator[Any]:
    """The system's Chromium (:func:`launch`), closed at the end."""
    with playwright_sync_api().sync_playwright() as p:
        b = launch(p)
        try:
            yield b
        finally:
            b.close()


@contextmanager
def checked_page(browser: Any, width: int = 1280, height: int = 900) -> Iterator[Any]:
    """A page of ``browser`` whose scripts must raise nothing while it is used: an error
    of the page's own fails the test that used it."""
    pg = browser.new_page(viewport={"width": width, "height": height})
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    try:
        yield pg
    finally:
        pg.close()
    assert errors == []

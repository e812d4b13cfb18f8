"""The test suite itself: its slow tiers are marked, and a machine without playwright skips
the browser tests, saying so, instead of failing to load them.

``addopts = "--strict-markers"`` makes an unregistered marker an error; these tests check
that every tier is registered with a description and that the browser modules go through
``support.ui.playwright_sync_api``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from support.paths import ROOT, TESTS
from support.playbook import Like, Playbook, PlaybookFailure

TIERS = {"browser", "peers", "faults", "interop", "packaging"}


def markers() -> dict[str, str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    lines = config["tool"]["pytest"]["ini_options"]["markers"]
    return dict(line.split(": ", 1) for line in lines)


def browser_modules() -> list[Path]:
    return sorted(
        p
        for p in TESTS.rglob("test_*.py")
        if "node_modules" not in p.parts
        and re.search(r"^\w+ = playwright_sync_api\(\)", p.read_text("utf-8"), re.M)
    )


def test_the_slow_tiers_are_registered_and_described() -> None:
    registered = markers()
    assert set(registered) >= TIERS
    assert all(len(text) > 20 for text in registered.values())


def test_every_browser_module_is_marked_and_imports_playwright_one_way() -> None:
    modules = browser_modules()
    assert len(modules) >= 2
    for path in modules:
        text = path.read_text(encoding="utf-8")
        assert "pytestmark = pytest.mark.browser" in text, path
    others = [
        p
        for p in TESTS.rglob("*.py")
        if "node_modules" not in p.parts
        and p not in modules
        and p.name != "ui.py"
        and re.search(r"^\s*(from|import) playwright", p.read_text("utf-8"), re.M)
    ]
    assert others == []


def _pytest_without_playwright(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """The browser modules run by a pytest whose Python cannot import playwright."""
    hidden = tmp_path / "hide"
    (hidden / "playwright").mkdir(parents=True)
    (hidden / "playwright" / "__init__.py").write_text(
        'raise ImportError("playwright is hidden by tests/test_suite.py")\n'
    )
    clean = {k: v for k, v in os.environ.items() if k != "ACP_PROXY_REQUIRE_BROWSER"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
         "--basetemp", str(tmp_path / "base"), *map(str, browser_modules())],
        cwd=ROOT,
        env={**clean, "PYTHONPATH": str(hidden), **env},
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip


def test_without_playwright_the_browser_modules_skip_saying_why(tmp_path: Path) -> None:
    r = _pytest_without_playwright(tmp_path)
    out = r.stdout + r.stderr
    assert r.returncode in (0, 5), out  # 5: every module skipped, so no test was collected
    n = len(browser_modules())
    assert re.search(rf"^{n} skipped in ", out, re.M) and "error" not in out.lower(), out
    assert f"SKIPPED [{n}] " in out and "playwright is not installed (playwright is hidden" in out


def test_without_playwright_ci_fails_instead_of_skipping(tmp_path: Path) -> None:
    r = _pytest_without_playwright(tmp_path, ACP_PROXY_REQUIRE_BROWSER="1")
    out = r.stdout + r.stderr
    assert r.returncode not in (0, 5), out
    assert "ACP_PROXY_REQUIRE_BROWSER is set" in out


@pytest.mark.parametrize("tier", sorted(TIERS - {"peers"}))  # peers: none written yet
def test_each_tier_marks_tests(tier: str) -> None:
    marked = [
        p
        for p in TESTS.rglob("test_*.py")
        if "node_modules" not in p.parts
        and re.search(rf"pytest\.mark\.{tier}\b", p.read_text("utf-8"))
        and p.name != "test_suite.py"
    ]
    assert marked != []


# -- the playbook helper (support.playbook) ------------------------------------------------


class Doubler:
    """A core for the helper's own tests: each number in, it and its double out."""

    def feed(self, item: int) -> list[int]:
        return [item, 2 * item]


def test_a_playbook_passes_when_every_step_gives_its_outputs() -> None:
    assert Playbook(Doubler()) >> 1 << 1 << 2 >> 5 << 5 << 10
    assert Playbook(Doubler()) >> 1 << ... >> 3 << 3 << ...
    assert Playbook(Doubler()) >> 4 << Like("even", lambda n: n % 2 == 0) << 8


def test_a_failing_playbook_names_the_step_its_line_and_what_came_out() -> None:
    first = sys._getframe().f_lineno + 1
    book = Playbook(Doubler()) >> 1 << 1 << 2
    book = book >> 3 << 3 << 7
    book = book >> 4
    with pytest.raises(PlaybookFailure) as failed:
        assert book
    assert str(failed.value).splitlines() == [
        f"step 2 (test_suite.py:{first + 1}) gave other outputs:",
        f"    1 >> 1   [test_suite.py:{first}]",
        "           << 1",
        "           << 2",
        f"!!  2 >> 3   [test_suite.py:{first + 1}]",
        "        expected << 3",
        "        expected << 7",
        "        got      << 3",
        "        got      << 6",
    ]


def test_a_step_of_a_playbook_written_over_many_lines_is_named_by_its_own_line() -> None:
    first = sys._getframe().f_lineno + 3  # the line of `>> 1`
    book = (
        Playbook(Doubler())
        >> 1
        << 1
        << 2
        >> 3
        << 9
    )  # fmt: skip
    with pytest.raises(PlaybookFailure) as failed:
        assert book
    assert (
        str(failed.value).splitlines()[0]
        == f"step 2 (test_suite.py:{first + 3}) gave other outputs:"
    )


def test_a_playbook_with_missing_or_extra_outputs_fails() -> None:
    with pytest.raises(PlaybookFailure):
        assert Playbook(Doubler()) >> 1 << 1
    with pytest.raises(PlaybookFailure):
        assert Playbook(Doubler()) >> 1 << 1 << 2 << 3
    with pytest.raises(PlaybookFailure):
        assert Playbook(Doubler()) >> 2 << Like("odd", lambda n: n % 2 == 1) << ...
    book = Playbook(Doubler()) >> 1 << ...
    assert book
    with pytest.raises(TypeError):
        bool(book)  # a playbook runs once

"""The sdist and the wheel, as a stranger gets them: built from a fresh clone, the wheel built
from the sdist, installed in a fresh virtualenv and run from there.

Package data that only an editable install has (a schema, a static file of the inspector,
the SQL schema) is the first defect a user would meet: ``demo``, ``check`` and ``ui`` run
from the installed wheel, in a directory outside the repository.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import fresh
from support.paths import ROOT
from support.ui import request, ui_server

pytestmark = pytest.mark.packaging


@dataclass
class Built:
    clone: Path
    sdist: Path
    wheel: Path
    venv: Path
    home: Path  # a directory outside the repository to run from

    def run(self, *args: str, db: Path | None = None) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        env["ACP_PROXY_DB"] = str(db or self.home / "recordings.sqlite")
        return subprocess.run(
            [str(self.venv / "bin" / "acp-proxy"), *args],
            cwd=self.home,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    work = tmp_path_factory.mktemp("wheel")
    clone = fresh.clone(ROOT, work / "clone")
    dist = work / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(dist), str(clone)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (sdist,) = dist.glob("*.tar.gz")
    (wheel,) = dist.glob("*.whl")
    venv = fresh.venv(work / "venv", pip=False)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
         "--quiet", str(wheel)],
        check=True,
        capture_output=True,
        timeout=600,
    )  # fmt: skip
    home = work / "home"
    home.mkdir()
    return Built(clone, sdist, wheel, venv, home)


def package_files(clone: Path) -> set[str]:
    """Every file of the package in a fresh clone, data files included."""
    return {
        p.relative_to(clone).as_posix()
        for p in (clone / "acp_proxy").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def version() -> str:
    source = (ROOT / "acp_proxy" / "__init__.py").read_text(encoding="utf-8")
    found = re.search(r'^__version__ = "([^"]+)"$', source, re.MULTILINE)
    assert found is not None
    return found.group(1)


def test_the_sdist_holds_the_licence_readme_changelog_and_the_package(built: Built) -> None:
    with tarfile.open(built.sdist) as tar:
        top = f"acp_proxy-{version()}/"
        names = {n.removeprefix(top) for n in tar.getnames()}
    assert {"LICENSE", "README.md", "CHANGELOG.md", "pyproject.toml"} <= names
    assert package_files(built.clone) - names == set()
    assert not any(n.startswith("tests/") for n in names)  # half a test suite helps no one


def test_the_wheel_holds_every_file_of_the_package_and_the_licence(built: Built) -> None:
    with zipfile.ZipFile(built.wheel) as whl:
        names = set(whl.namelist())
        meta = whl.read(f"acp_proxy-{version()}.dist-info/METADATA").decode()
    assert package_files(built.clone) - names == set()
    assert f"acp_proxy-{version()}.dist-info/licenses/LICENSE" in names
    assert "License-Expression: MIT" in meta.splitlines()
    assert f"Version: {version()}" in meta.splitlines()


def test_the_version_is_written_once(built: Built) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "version" not in project and "version" in project["dynamic"]
    r = built.run("--version")
    assert r.stdout.strip() == f"acp-proxy, version {version()}"
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    released = re.findall(r"^## \[(\d[^\]]*)\]", changelog, re.MULTILINE)
    assert released[0] == version()


def test_the_installed_wheel_runs_the_demo(built: Built) -> None:
    r = built.run("demo", db=built.home / "demo.sqlite")
    assert r.returncode == 0, r.stderr
    assert "session/prompt" in r.stdout and "turn 1 ended: end_turn" in r.stderr
    # it ran the installed package, not a tree that happens to be nearby
    agent = built.run("captures", "--json", db=built.home / "demo.sqlite").stdout
    assert str(built.venv) in agent and str(ROOT) not in agent


def test_the_installed_wheel_checks_against_its_bundled_schemas(built: Built) -> None:
    db = built.home / "check.sqlite"
    assert built.run("demo", db=db).returncode == 0
    clean = built.run("check", db=db)
    assert clean.returncode == 0 and "no findings" in clean.stdout, clean.stdout + clean.stderr
    # a chunk without its required content breaks the bundled v1 schema
    lines = built.run("export", "--format", "jsonl", db=db).stdout.splitlines()
    i = next(i for i, line in enumerate(lines) if "agent_message_chunk" in line)
    lines[i] = lines[i].replace('\\"content\\":', '\\"kontent\\":', 1)
    broken = built.home / "broken.jsonl"
    broken.write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = built.run("check", str(broken), db=db)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "schema.invalid" in r.stdout and '"content" is a required property' in r.stdout


def test_the_installed_wheel_serves_the_inspector_and_its_static_files(built: Built) -> None:
    db = built.home / "ui.sqlite"
    assert built.run("demo", db=db).returncode == 0
    static = ROOT / "acp_proxy" / "ui" / "static"
    with ui_server(db, proxy=[str(built.venv / "bin" / "acp-proxy")]) as url:
        status, _, page = request(url, "/")
        assert status == 200 and page == (static / "index.html").read_bytes()
        assets = re.findall(rb'(?:href|src)="(/static/[^"]+)"', page)
        assert len(assets) == 5  # the stylesheet, the icon and three scripts
        for path in assets:
            status, _, body = request(url, path.decode())
            assert status == 200, path
            assert body == (static / path.decode().removeprefix("/static/")).read_bytes()

"""The container image: built from what a fresh clone holds, run as a user of its own.

Without an engine, the Dockerfile is read as an engine reads it and its build replayed
(``support.dockerfile``): the build context is what ``git ls-files`` gives less
``.dockerignore``, each ``COPY`` must find its paths there, and the wheel stage and the
install step run in a fresh virtualenv from exactly what they were given. Where an engine
answers, the image is built and run for real.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from support import fresh
from support.dockerfile import Copy, Replay, Run, Stage, context_files, ignored, parse
from support.paths import ROOT

pytestmark = pytest.mark.packaging

DOCKERFILE = ROOT / "Dockerfile"
SHOW_USER = "id -u; stat -c %U:%a /data"  # who runs, and who owns the volume


def stages() -> list[Stage]:
    return parse(DOCKERFILE.read_text(encoding="utf-8"))


def test_the_wheel_is_built_in_one_stage_and_installed_in_a_slim_one() -> None:
    build, final = stages()
    assert build.name is not None and final.base.endswith("-slim")
    copies = [s for _, s in final.steps if isinstance(s, Copy)]
    assert all(c.stage == build.name for c in copies), "the image copies no source tree"
    mounts = [m for _, s in final.steps if isinstance(s, Run) for m in s.mounts]
    assert [m.stage for m in mounts] == [build.name]


def test_the_image_runs_as_a_user_of_its_own_who_owns_data() -> None:
    final = stages()[-1]
    assert final.user not in ("root", "0", "")
    assert final.volumes == ["/data"] and final.env["ACP_PROXY_DB"].startswith("/data/")
    system = " ".join(s.command for _, s in final.steps if isinstance(s, Run))
    assert re.search(rf"useradd\b.*\b{final.user}\b", system)
    # the volume is the user's, 0700: recordings hold secrets (docs/storage.md)
    assert re.search(rf"install -d -m 0700 -o {final.user} -g {final.user} /data\b", system)


def test_the_default_command_is_the_demo() -> None:
    final = stages()[-1]
    assert final.entrypoint == ["acp-proxy"] and final.cmd == ["demo"]


def test_every_path_the_dockerfile_copies_is_in_the_build_context() -> None:
    context = set(context_files(ROOT))
    missing = []
    for stage in stages():
        for _, step in stage.steps:
            if isinstance(step, Copy) and step.stage is None:
                for source in step.sources:
                    rel = source.rstrip("/")
                    if rel not in context and not any(f.startswith(rel + "/") for f in context):
                        missing.append(source)
    assert missing == []


def test_the_context_is_the_package_and_what_its_build_reads() -> None:
    tops = {f.split("/")[0] for f in context_files(ROOT)}
    assert tops == {
        "acp_proxy",
        "pyproject.toml",
        "README.md",
        "LICENSE",
        "CHANGELOG.md",
        "MANIFEST.in",
    }


def test_a_dockerfile_naming_a_path_the_repository_lacks_fails(tmp_path: Path) -> None:
    # the Dockerfile as it was when the package was still called `proxy`
    old = parse(
        "FROM python:3.11-slim\n"
        "COPY pyproject.toml README.md /build/\n"
        "COPY proxy /build/proxy\n"
        "RUN pip install --no-cache-dir /build && rm -rf /build\n"
    )
    replay = Replay(ROOT, tmp_path, Path(sys.prefix))
    with pytest.raises(FileNotFoundError, match="COPY proxy: the repository has no such path"):
        replay.play(old)
    ignored_copy = parse("FROM python:3.11-slim\nCOPY tests /t\n")
    with pytest.raises(FileNotFoundError, match=r"\.dockerignore leaves it out"):
        Replay(ROOT, tmp_path / "again", Path(sys.prefix)).play(ignored_copy)


def test_dockerignore_reads_as_an_engine_does() -> None:
    patterns = ["*", "!acp_proxy", "**/__pycache__", "!keep/**/x.py", "docs/*.md"]
    assert ignored(patterns, "tests/conftest.py")
    assert not ignored(patterns, "acp_proxy/cli/__init__.py")
    assert ignored(patterns, "acp_proxy/cli/__pycache__/x.pyc")
    assert not ignored(patterns, "keep/a/b/x.py") and ignored(patterns, "keep/a/y.py")
    assert ignored(["docs/*.md"], "docs/a.md") and not ignored(["docs/*.md"], "docs/sub/a.md")


def test_the_build_replayed_without_an_engine_installs_and_runs_the_demo(tmp_path: Path) -> None:
    venv = fresh.venv(tmp_path / "venv")
    replay = Replay(ROOT, tmp_path / "image", venv)
    image = replay.play(stages())
    final = stages()[-1]
    for volume in final.volumes:
        (image / volume.lstrip("/")).mkdir(mode=0o700, parents=True)
    env = {k: str(image / v.lstrip("/")) for k, v in final.env.items()}
    done = subprocess.run(
        [str(venv / "bin" / final.entrypoint[0]), *final.cmd],
        env={**os.environ, **env, "PATH": f"{venv / 'bin'}:{os.environ['PATH']}"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "session/prompt" in done.stdout
    assert (image / "data" / "recordings.sqlite").exists()
    # what was installed is the wheel: nothing imports from the repository
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import acp_proxy; print(acp_proxy.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert where.startswith(str(venv)), where


def _engine() -> str | None:
    """Why no image can be built here, or None when an engine answers."""
    docker = shutil.which("docker")
    if docker is None:
        return "no docker client"
    info = subprocess.run(
        [docker, "info", "--format", "{{.ServerVersion}}"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if info.returncode != 0:
        return f"no container engine answers ({(info.stderr.strip().splitlines() or ['?'])[-1]})"
    return None


def test_the_image_builds_and_runs_the_demo_as_its_own_user() -> None:
    if (why := _engine()) is not None:
        pytest.skip(f"real docker build not run: {why}")
    tag = f"acp-proxy-test:{uuid.uuid4().hex[:12]}"
    try:
        subprocess.run(["docker", "build", "-t", tag, str(ROOT)], check=True, timeout=900)
        demo = subprocess.run(
            ["docker", "run", "--rm", tag], capture_output=True, text=True, timeout=300
        )
        assert demo.returncode == 0, demo.stderr
        assert "session/prompt" in demo.stdout
        who = subprocess.run(
            ["docker", "run", "--rm", "--entrypoint", "sh", tag, "-c", SHOW_USER],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout.split()
        assert who[0] != "0" and who[1] == "acp:700"
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, timeout=120)


def test_the_readme_shows_how_to_wrap_an_agent_and_serve_the_ui() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Run it in a container", 1)[1].split("\n## ", 1)[0]
    runs = re.findall(r"docker run [^\n]*", section.replace("\\\n", " "))
    assert any(re.search(r" -i .*\brecord -- ", r) for r in runs), runs
    ui = [r for r in runs if re.search(r"\bui --listen 0\.0\.0\.0:\d+ --token ", r)]
    assert ui and all("-v acp-recordings:/data" in r for r in ui)
    user = stages()[-1].user
    assert f"USER root\\nRUN pip install my-agent\\nUSER {user}" in section

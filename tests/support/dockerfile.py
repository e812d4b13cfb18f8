"""A Dockerfile and its ``.dockerignore`` read as an engine reads them, and a build replayed
without one.

Only the instructions the project's Dockerfile uses are understood (``FROM … AS``,
``WORKDIR``, ``COPY [--from]``, ``RUN [--mount=type=bind,…]``, ``USER``, ``ENV``,
``VOLUME``, ``ENTRYPOINT``, ``CMD``); any other is an error, so a test never passes over a
step it did not read. :class:`Replay` plays the stages into directories that stand for each
stage's root: ``COPY`` copies what the build context holds (or fails, naming what is
missing), and the ``pip``/``python`` commands of each ``RUN`` run in a fresh virtualenv with
every absolute path taken under that root. The system steps (``useradd``, ``install -d``,
``chown``) are read, not run: they need root and an image.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from support.fresh import tracked

__all__ = [
    "Copy",
    "Mount",
    "Replay",
    "Run",
    "Stage",
    "context_files",
    "ignored",
    "parse",
]

RUNNABLE = {"pip", "python", "python3"}
SYSTEM = {"useradd", "groupadd", "install", "mkdir", "chown", "chmod", "rm"}


@dataclass
class Copy:
    sources: list[str]
    dest: str
    stage: str | None  # --from: another stage's root instead of the build context


@dataclass
class Mount:
    stage: str
    source: str
    target: str


@dataclass
class Run:
    command: str
    mounts: list[Mount]


@dataclass
class Stage:
    base: str
    name: str | None
    steps: list[tuple[str, Copy | Run | str]] = field(default_factory=list)
    user: str = "root"
    env: dict[str, str] = field(default_factory=dict)
    volumes: list[str] = field(default_factory=list)
    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)


def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order: comments dropped, continued lines joined."""
    out: list[tuple[str, str]] = []
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue  # a comment between continued lines
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        whole = pending + stripped
        pending = ""
        word, _, rest = whole.partition(" ")
        out.append((word.upper(), rest.strip()))
    if pending:
        raise ValueError("the Dockerfile ends inside a continued line")
    return out


def _flags(args: str) -> tuple[dict[str, list[str]], list[str]]:
    words = shlex.split(args)
    flags: dict[str, list[str]] = {}
    while words and words[0].startswith("--"):
        name, _, value = words.pop(0)[2:].partition("=")
        flags.setdefault(name, []).append(value)
    return flags, words


def _mount(spec: str) -> Mount:
    parts = dict(p.partition("=")[::2] for p in spec.split(","))
    if parts.get("type") != "bind" or "from" not in parts:
        raise ValueError(f"a RUN mount this reading does not know: {spec}")
    return Mount(parts["from"], parts.get("source", "/"), parts["target"])


def parse(text: str) -> list[Stage]:
    """The stages of a Dockerfile, each with its steps in order."""
    stages: list[Stage] = []
    for word, args in _instructions(text):
        if word == "FROM":
            base, _, name = args.partition(" AS ")
            stages.append(Stage(base.strip(), name.strip() or None))
            continue
        if not stages:
            raise ValueError(f"{word} before FROM")
        stage = stages[-1]
        if word == "COPY":
            flags, words = _flags(args)
            source = (flags.get("from") or [None])[0]
            stage.steps.append((word, Copy(words[:-1], words[-1], source)))
        elif word == "RUN":
            flags, _ = _flags(args)
            command = re.sub(r"^(--\S+\s+)+", "", args)
            stage.steps.append((word, Run(command, [_mount(m) for m in flags.get("mount", [])])))
        elif word == "WORKDIR":
            stage.steps.append((word, args))
        elif word == "USER":
            stage.user = args
        elif word == "ENV":
            key, _, value = args.partition("=")
            stage.env[key.strip()] = value.strip()
        elif word == "VOLUME":
            stage.volumes += json.loads(args)
        elif word in ("ENTRYPOINT", "CMD"):
            setattr(stage, word.lower(), json.loads(args))
        else:
            raise ValueError(f"an instruction this reading does not know: {word} {args}")
    return stages


def _pattern(pattern: str) -> re.Pattern[str]:
    """A .dockerignore pattern as a regex: ``**`` spans directories, ``*`` and ``?`` do not."""
    out = ""
    for piece in re.split(r"(\*\*/?|\*|\?)", pattern.strip("/")):
        if piece.startswith("**"):
            out += "(?:.*/)?" if piece.endswith("/") else ".*"
        elif piece == "*":
            out += "[^/]*"
        elif piece == "?":
            out += "[^/]"
        else:
            out += re.escape(piece)
    return re.compile(out)


def ignored(patterns: list[str], rel: str) -> bool:
    """Whether the build context leaves ``rel`` out: the last pattern matching it, or one of
    its parent directories, decides (``!`` brings a path back)."""
    parents = [rel]
    while "/" in parents[-1]:
        parents.append(parents[-1].rsplit("/", 1)[0])
    out = False
    for raw in patterns:
        negated = raw.startswith("!")
        regex = _pattern(raw[1:] if negated else raw)
        if any(regex.fullmatch(p) for p in parents):
            out = not negated
    return out


def dockerignore(root: Path) -> list[str]:
    path = root / ".dockerignore"
    if not path.exists():
        return []
    lines = (line.strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def context_files(root: Path) -> list[str]:
    """The files a fresh clone sends as the build context: tracked ones, less the ignored."""
    patterns = dockerignore(root)
    return [f for f in tracked(root) if not ignored(patterns, f)]


class Replay:
    """Plays the stages of a Dockerfile under ``work``: the build context is copied to
    ``work/context``, stage *i* has ``work/stage-i`` for its root, and the ``pip`` and
    ``python`` of its ``RUN`` steps are those of the virtualenv ``venv``."""

    def __init__(self, repo: Path, work: Path, venv: Path) -> None:
        self.repo = repo
        self.context = work / "context"
        self.work = work
        self.venv = venv
        self.roots: dict[str, Path] = {}
        self.log: list[str] = []
        for rel in context_files(repo):
            target = self.context / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(repo / rel, target)

    def play(self, stages: list[Stage]) -> Path:
        """Play every stage; the root of the last."""
        root = self.work
        for i, stage in enumerate(stages):
            root = self.work / f"stage-{i}"
            root.mkdir()
            self.roots[str(i)] = root
            if stage.name:
                self.roots[stage.name] = root
            cwd = "/"
            for word, step in stage.steps:
                self.log.append(f"stage {i} {word} {step}")
                if isinstance(step, str):
                    cwd = os.path.join(cwd, step)
                    (root / cwd.lstrip("/")).mkdir(parents=True, exist_ok=True)
                elif isinstance(step, Copy):
                    self._copy(root, cwd, step)
                else:
                    self._run(root, cwd, step)
        return root

    def _copy(self, root: Path, cwd: str, step: Copy) -> None:
        source_root = self.context if step.stage is None else self.roots[step.stage]
        dest = root / os.path.join(cwd, step.dest).lstrip("/")
        for source in step.sources:
            found = sorted(glob.glob(str(source_root / source.lstrip("/"))))
            if not found:
                raise FileNotFoundError(f"COPY {source}: {self._why_missing(source, step)}")
            for path in map(Path, found):
                if path.is_dir():
                    shutil.copytree(path, dest, dirs_exist_ok=True)
                elif step.dest.endswith("/") or len(step.sources) > 1 or dest.is_dir():
                    dest.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, dest / path.name)
                else:
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, dest)

    def _why_missing(self, source: str, step: Copy) -> str:
        if step.stage is not None:
            return f"stage {step.stage} has no such path"
        if glob.glob(str(self.repo / source)):
            return "the build context has no such path (.dockerignore leaves it out)"
        return "the repository has no such path"

    def _path(self, root: Path, word: str, mounts: list[Mount]) -> list[str]:
        """A word of a command, its absolute path taken under the right root (globbed)."""
        if not word.startswith("/"):
            return [word]
        for m in mounts:
            if word == m.target or word.startswith(m.target + "/"):
                mapped = str(self.roots[m.stage] / m.source.lstrip("/")) + word[len(m.target) :]
                break
        else:
            mapped = str(root / word.lstrip("/"))
        if any(c in mapped for c in "*?["):
            found = sorted(glob.glob(mapped))
            if not found:
                raise FileNotFoundError(f"{word}: nothing matches {mapped}")
            return found
        return [mapped]

    def _run(self, root: Path, cwd: str, step: Run) -> None:
        for part in re.split(r"\s*&&\s*", step.command):
            words = shlex.split(part)
            if words[0] in SYSTEM:
                continue  # needs root and the image's own /etc; read by the tests instead
            if words[0] not in RUNNABLE:
                raise ValueError(f"RUN {part}: this replay does not know how to run it")
            argv = [str(self.venv / "bin" / words[0])]
            for word in words[1:]:
                argv += self._path(root, word, step.mounts)
            where = root / cwd.lstrip("/")
            done = subprocess.run(argv, cwd=where, capture_output=True, text=True, timeout=300)
            if done.returncode != 0:
                raise AssertionError(
                    f"RUN {part} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
                )

"""Published ACP programs as test peers (tests/npm-peers, pinned by its lock file): which
ones, how each is started, and the sandbox each runs in.

The sandbox is what keeps them offline and away from the user's files: a fresh home (and
XDG directories, and TMPDIR) per test, an environment built from nothing but ``PATH``, fake
keys, and every model API pointed at a loopback port that refuses connections, so each
agent goes as far as it can without a model (initialize, auth, session/new) and its prompt
fails with a network error, at once, on any machine (docs/peers.md). A marker in the
environment finds every process of the run again (support.ptree).

No tests here; the test modules import it.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from support import ptree
from support.paths import TESTS

NPM_PEERS = TESTS / "npm-peers"
MODULES = NPM_PEERS / "node_modules"
INSTALL = "npm install --prefix tests/npm-peers --ignore-scripts"
FAKE_OPENAI_KEY = "sk-acp-proxy-test-not-a-key"
FAKE_GEMINI_KEY = "acp-proxy-test-not-a-key"


@dataclass(frozen=True)
class RealPeer:
    """A published program: its npm package, pinned version and how it is started."""

    name: str
    package: str
    version: str
    argv: tuple[str, ...]  # the package's bin, then its arguments
    protocol: int = 1  # the ACP version the scripted editor offers it
    login: tuple[str, str] | None = None  # (method, methodId) of the editor's sign-in
    failure: bytes = b""  # what the agent's answer to the prompt says went wrong
    stderr_says: bytes | None = None  # what its stderr says went wrong, if it says it
    # a session/update the agent sends on its own, soon after session/new: an editor whose
    # user types the prompt only then sees it first (else it lands before or after the prompt)
    announces: str | None = None

    def command(self) -> list[str]:
        return [str(MODULES / ".bin" / self.argv[0]), *self.argv[1:]]


CODEX = RealPeer(
    "codex-acp",
    "@agentclientprotocol/codex-acp",
    "2.6.0",
    ("codex-acp",),
    protocol=2,
    login=("auth/login", "api-key"),
    failure=b"Reconnecting...",
)
GEMINI = RealPeer(
    "gemini",
    "@google/gemini-cli",
    "0.61.0",
    ("gemini", "--acp"),
    login=("authenticate", "gemini-api-key"),
    failure=b"fetch failed",
    stderr_says=b"fetch failed",
    announces="available_commands_update",
)
QWEN = RealPeer(
    "qwen",
    "@qwen-code/qwen-code",
    "0.15.10",
    ("qwen", "--acp", "--auth-type=openai"),
    failure=b"Connection error.",
    stderr_says=b"Connection error.",
)
ACPX = RealPeer("acpx", "acpx", "0.1.15", ("acpx",))
AGENTS = [CODEX, GEMINI, QWEN]


def require(peer: RealPeer) -> None:
    """Skip, saying why and how to install it, when ``peer`` cannot run here; CI sets
    ``ACP_PROXY_REQUIRE_PEERS`` (it installs them), and there this is a failure."""
    why = None
    manifest = MODULES / peer.package / "package.json"
    if shutil.which("node") is None:
        why = "node is not on PATH (Node.js 20 or later)"
    elif not manifest.is_file():
        why = f"{peer.package} is not installed in tests/npm-peers: run `{INSTALL}`"
    elif (found := json.loads(manifest.read_text())["version"]) != peer.version:
        why = f"{peer.package} {found} is installed, not {peer.version}: run `{INSTALL}`"
    if why is None:
        return
    if os.environ.get("ACP_PROXY_REQUIRE_PEERS"):
        pytest.fail(why)
    pytest.skip(why)


_REFUSING: list[socket.socket] = []


def refusing_port() -> int:
    """A loopback port bound by this process and never listened on: every connection to
    it is refused at once, and no other program can take it while the tests run."""
    if not _REFUSING:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        _REFUSING.append(s)
    port: int = _REFUSING[0].getsockname()[1]
    return port


@dataclass(frozen=True)
class Sandbox:
    """Where one test runs the real peers: its home, its workspace, its environment."""

    home: Path
    workspace: Path
    env: dict[str, str]
    marker: str


def sandbox(root: Path) -> Sandbox:
    """A fresh home under ``root`` with each agent's settings (docs/peers.md says why
    each one is there), and an environment that reaches no real key and no network."""
    home, workspace = root / "home", root / "workspace"
    workspace.mkdir(parents=True)
    api = f"http://127.0.0.1:{refusing_port()}"
    _write(home / ".codex" / "config.toml", f'openai_base_url = "{api}/v1"\n')
    gemini: dict[str, Any] = {
        "general": {"maxAttempts": 1},
        "model": {"name": "gemini-2.5-flash"},
        "privacy": {"usageStatisticsEnabled": False},
    }
    _write(home / ".gemini" / "settings.json", json.dumps(gemini))
    qwen = {"model": {"generationConfig": {"maxRetries": 0}}}
    _write(home / ".qwen" / "settings.json", json.dumps(qwen))
    marker = ptree.new_marker()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "TMPDIR": str(_dir(home / "tmp")),
        "OPENAI_API_KEY": FAKE_OPENAI_KEY,
        "OPENAI_BASE_URL": f"{api}/v1",
        "GEMINI_API_KEY": FAKE_GEMINI_KEY,
        "GOOGLE_GEMINI_BASE_URL": api,
        ptree.MARKER: marker,
    }
    return Sandbox(home, workspace, env, marker)


def _write(path: Path, text: str) -> None:
    _dir(path.parent)
    path.write_text(text)


def _dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path

"""Shared fixtures: real processes, real SQLite files, no mocks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.demo import demo_database


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: a worker more than the machine has cores. About a third of the suite's
    time is spent waiting on the processes and sockets it starts (2 cores: 1.7 of them
    busy with three workers), so a third worker keeps both cores working."""
    return (os.cpu_count() or 1) + 1


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "rec.sqlite"


@pytest.fixture
def demo_copy(db: Path) -> Path:
    """``db``, holding the demo's capture (tests/support/demo.py)."""
    return demo_database(db)


@pytest.fixture(autouse=True)
def _no_env_db(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tests never touch the user's default database."""
    monkeypatch.setenv("ACP_PROXY_DB", str(tmp_path / "default.sqlite"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    runtime = tmp_path / "runtime"  # where ledgers go that a full disk refused
    runtime.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    os.environ.pop("PYTHONSTARTUP", None)
    monkeypatch.delenv("ACP_PROXY_CHAIN", raising=False)  # no test is a hop of our caller

"""The agent process lifecycle, once, on real child processes: spawn, exit on its own, the
grace → SIGTERM → SIGKILL escalation, exit status, and the spawn errors a shell gives."""

from __future__ import annotations

import contextlib
import json
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.proc import db_rows

from acp_proxy.errors import AgentSpawnError
from acp_proxy.record.link import CaptureMeta, RecorderLink, Tap
from acp_proxy.transports.process import AgentProcess

READY = "import sys, time; sys.stdout.write('ready\\n'); sys.stdout.flush(); time.sleep(60)"
SLEEPS = [sys.executable, "-c", READY]
IGNORE = "import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
IGNORES_SIGTERM = [sys.executable, "-c", IGNORE + READY]


@contextlib.contextmanager
def recording(db: Path) -> Iterator[Tap]:
    link = RecorderLink(db, in_process=True)
    tap = link.open_capture(CaptureMeta(agent_command=["test"]))
    try:
        yield tap
    finally:
        tap.close()
        link.close()


def events(db: Path) -> list[tuple[str, dict[str, Any]]]:
    rows = db_rows(db, "SELECT kind, detail FROM events ORDER BY id")
    return [(str(k), json.loads(str(d)) if d else {}) for k, d in rows]


async def test_an_agent_that_exits_on_its_own_is_waited_for_not_signalled(db: Path) -> None:
    code = "import sys; sys.stderr.write('bye'); sys.exit(3)"  # long before the grace ends
    with recording(db) as tap:
        agent = AgentProcess.spawn([sys.executable, "-c", code], tap, grace=30)
        await agent.pipes()  # stderr is relayed and recorded from here on
        assert await agent.finish("test") == (3, None)
    kinds = [k for k, _ in events(db)]
    assert kinds == ["spawn", "exit"]
    spawn, exit_ = (d for _, d in events(db))
    assert spawn["pid"] == agent.proc.pid
    assert (exit_["returncode"], exit_["exit_code"], exit_["signal"]) == (3, 3, None)
    assert exit_["runtime_ms"] >= 0
    assert db_rows(db, "SELECT data FROM stderr") == [(b"bye",)]


async def test_sigterm_ends_an_agent_that_does_not_exit(db: Path) -> None:
    with recording(db) as tap:
        agent = AgentProcess.spawn(SLEEPS, tap, grace=0.1)
        out, _ = await agent.pipes()
        assert await out.readline() == b"ready\n"
        assert await agent.finish("client gone") == (128 + signal.SIGTERM, signal.SIGTERM)
    terminate = [d for k, d in events(db) if k == "terminate"]
    assert terminate == [{"signal": "SIGTERM", "reason": "client gone"}]


async def test_an_agent_ignoring_sigterm_is_killed_once_however_often_it_is_ended(
    db: Path,
) -> None:
    with recording(db) as tap:
        agent = AgentProcess.spawn(IGNORES_SIGTERM, tap, grace=0.1)
        out, _ = await agent.pipes()
        assert await out.readline() == b"ready\n"
        agent.stop_soon("client gone")
        agent.stop_soon("again")
        assert await agent.stop("and again") == -signal.SIGKILL
        assert await agent.finish("at the end") == (128 + signal.SIGKILL, signal.SIGKILL)
    assert [(k, d.get("signal")) for k, d in events(db)] == [
        ("spawn", None),
        ("terminate", "SIGTERM"),
        ("terminate", "SIGKILL"),
        ("exit", signal.SIGKILL),
    ]


def test_a_missing_command_is_127_and_a_file_that_cannot_run_126(db: Path, tmp_path: Path) -> None:
    plain = tmp_path / "not-executable"
    plain.write_text("#!/bin/sh\n")
    cases = [
        (["no-such-agent-anywhere"], 127),
        ([str(tmp_path / "missing")], 127),
        ([str(plain)], 126),
        ([str(tmp_path)], 126),
    ]
    with recording(db) as tap:
        for argv, status in cases:
            with pytest.raises(AgentSpawnError) as e:
                AgentProcess.spawn(argv, tap, grace=0.1)
            assert e.value.exit_code == status, argv
    assert events(db) == []  # nothing was started, so nothing is said to have been

"""Recordings as tests: the pytest plugin acp-proxy installs (docs/api.md, "pytest").

What belongs here: two fixtures and one option, registered under the ``pytest11`` entry
point, so any project with acp-proxy installed has them:

- ``acp_replay(recording, agent, ignore=(), timeout=30, grace=3, cwd=None)`` drives ``agent``
  (an argv) with the recorded client, as ``acp-proxy replay client`` does, and fails the test
  with the same report when the runs differ. ``recording`` is a ``jsonl`` export or
  ``DB#CAPTURE``. It returns the outcome (``diverged``, ``divergences``, ``report()``).
- ``acp_record`` wraps an agent for the test's own client: ``acp_record.argv(agent)`` is the
  command to spawn in its place; once the client is done, ``acp_record.capture()`` is the
  capture, through the Python API (tool calls, diffs, turns, ``findings()``).
- ``--acp-update`` re-records instead of comparing (snapshot style): the new run of each
  ``acp_replay`` becomes its ``jsonl`` recording.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # imported when a fixture is used: pytest starts as fast as before
    from acp_proxy.api import Capture

__all__ = ["AcpRecord", "acp_record", "acp_replay", "pytest_addoption"]

_SETTLE_S = 60.0  # how long a capture may take to be written once its client is done


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("acp-proxy")
    group.addoption(
        "--acp-update",
        action="store_true",
        default=False,
        help="acp_replay: re-record the recordings (their new runs replace the jsonl files) "
        "instead of comparing.",
    )


def _recording(ref: str | Path, rootdir: Path) -> tuple[str, Path]:
    """``(ref for load_recording, database)`` for a jsonl path or ``DB#CAPTURE``."""
    text = str(ref)
    if "#" in text and not Path(text).is_file():
        db, _, capture = text.partition("#")
        path = Path(db).expanduser()
        if not path.is_absolute():
            path = rootdir / path
        if not path.is_file():
            pytest.fail(f"acp_replay: no recordings database at {path}", pytrace=False)
        return capture, path
    path = Path(text).expanduser()
    if not path.is_absolute():
        path = rootdir / path
    if not path.is_file():
        pytest.fail(
            f"acp_replay: no recording at {path} (a jsonl export: acp-proxy export CAPTURE "
            "-o FILE; or DB#CAPTURE)",
            pytrace=False,
        )
    return str(path), path


@pytest.fixture
def acp_replay(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """Replay a recording's client against an agent; the test fails on a divergence."""
    from acp_proxy.errors import ProxyError
    from acp_proxy.replay.run import replay_client
    from acp_proxy.replay.serve import load_recording

    update = bool(request.config.getoption("--acp-update"))
    rootdir = Path(str(request.config.rootpath))

    def replay(
        recording: str | Path,
        agent: Sequence[str],
        *,
        ignore: Sequence[str] = (),
        timeout: float = 30.0,
        grace: float = 3.0,
        cwd: str | Path | None = None,
    ) -> Any:
        ref, where = _recording(recording, rootdir)
        db = tmp_path / "acp-replay.sqlite"
        try:
            rec = load_recording(ref, where)  # a jsonl file, or the capture in a database
            outcome = replay_client(rec, list(agent), db, ignore=ignore, timeout=timeout,
                                    grace=grace, cwd=str(cwd) if cwd else None)  # fmt: skip
        except ProxyError as e:
            pytest.fail(f"acp_replay: {e}", pytrace=False)
        if update:
            _rerecord(db, outcome.capture_id, ref, where)
            return outcome
        if outcome.diverged:
            pytest.fail("\n".join(outcome.report()), pytrace=False)
        return outcome

    return replay


def _rerecord(db: Path, capture_id: int | None, ref: str, where: Path) -> None:
    """The replayed run becomes the recording (a jsonl file only: a database is not ours
    to rewrite)."""
    from acp_proxy.export.jsonl import write_export
    from acp_proxy.store.refs import resolve

    if ref != str(where):
        pytest.fail("--acp-update rewrites jsonl recordings, not a database's captures",
                    pytrace=False)  # fmt: skip
    source = resolve(str(capture_id), db)
    try:
        tmp = where.with_name(where.name + ".new")
        with open(tmp, "wb") as out:
            write_export(source, out)
        tmp.replace(where)
    finally:
        source.close()


class AcpRecord:
    """Records what the test's own client and an agent say (``acp_record``)."""

    def __init__(self, db: Path) -> None:
        self.db = db

    def argv(self, agent: Sequence[str], *, label: str | None = None) -> list[str]:
        """The command to spawn in place of ``agent``: the agent, wrapped and recorded."""
        extra = ["--label", label] if label else []
        return [sys.executable, "-m", "acp_proxy", "record", "--db", str(self.db), *extra,
                "--", *agent]  # fmt: skip

    def capture(self, ref: str | int | None = None) -> Capture:
        """The capture (the latest when ``ref`` is None), once it is written whole."""
        from acp_proxy.api import Recordings
        from acp_proxy.store.liveness import capture_state

        deadline = time.monotonic() + _SETTLE_S
        while True:
            if self.db.is_file():
                rec = Recordings(self.db)
                cap = rec.capture(ref)
                if capture_state(cap.row) in ("done", "killed") or time.monotonic() > deadline:
                    return cap
                rec.close()
            elif time.monotonic() > deadline:
                pytest.fail(f"acp_record: nothing was recorded into {self.db}", pytrace=False)
            time.sleep(0.05)


@pytest.fixture
def acp_record(tmp_path: Path) -> AcpRecord:
    """Wrap an agent for the test's client; read the capture through the Python API."""
    return AcpRecord(tmp_path / "acp-record.sqlite")

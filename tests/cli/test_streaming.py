"""Big captures: ``show --json`` and ``export`` stream (their memory does not grow with the
capture), and long work shows progress on stderr when stderr is a terminal."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
from pathlib import Path

import pytest
from support.big import peak_rss_kib, record_flood, record_sessions
from support.proc import PROXY

BIG = 60_000


@pytest.fixture(scope="module")
def dbs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("big")
    small, big = tmp / "small.sqlite", tmp / "big.sqlite"
    record_flood(small, 600)
    record_flood(big, BIG)
    return small, big


@pytest.mark.parametrize(
    "args",
    [
        ["show", "--json"],
        ["export", "--format", "jsonl"],
        ["export", "--format", "html"],
        ["export", "--format", "har"],
    ],
    ids=" ".join,
)
def test_memory_does_not_grow_with_the_capture(dbs: tuple[Path, Path], args: list[str]) -> None:
    small, big = dbs
    base = peak_rss_kib([*args, "--db", str(small)])
    grown = peak_rss_kib([*args, "--db", str(big)])
    # a hundred times the frames (12 MB of them): what was held in memory grew by 250 MB
    assert grown - base < 40 * 1024, (base, grown)


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("sessions")
    small, big = tmp / "small.sqlite", tmp / "big.sqlite"
    record_sessions(small, 4_000, tmp)
    record_sessions(big, 80_000, tmp)
    return small, big


@pytest.mark.parametrize("view", ["tools", "terminals", "diffs"])
def test_view_memory_does_not_grow_with_the_capture(sessions: tuple[Path, Path], view: str) -> None:
    small, big = sessions
    base = peak_rss_kib([view, "--json", "--db", str(small)])
    grown = peak_rss_kib([view, "--json", "--db", str(big)])
    # twenty times the frames (4 000 tool calls, 2 000 terminals, 3 000 file changes): all
    # of it held at once until the list was printed grew by 40 to 70 MB
    assert grown - base < 12 * 1024, (base, grown)


def test_show_json_streamed_is_one_document(dbs: tuple[Path, Path]) -> None:
    _, big = dbs
    out = subprocess.run(
        [*PROXY, "show", "--json", "--db", str(big)], capture_output=True, check=True, timeout=300
    ).stdout
    doc = json.loads(out)
    assert len(doc["frames"]) == BIG and doc["frames"][-1]["seq"] == BIG - 1
    assert doc["capture"]["message_count"] == BIG and doc["stderr"] == []


def _stderr_on_pty(args: list[str], env: dict[str, str] | None = None, status: int = 0) -> bytes:
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [*PROXY, *args], stdout=subprocess.DEVNULL, stderr=slave, env={**os.environ, **(env or {})}
    )
    os.close(slave)
    err = b""
    while True:
        if not select.select([master], [], [], 120)[0]:
            break
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:
            break
        if not chunk:
            break
        err += chunk
    os.close(master)
    assert proc.wait(60) == status
    return err


def test_long_exports_and_views_show_progress_on_a_terminal(
    dbs: tuple[Path, Path], tmp_path: Path
) -> None:
    small, big = dbs
    err = _stderr_on_pty(
        ["export", "--db", str(big), "--format", "html", "-o", str(tmp_path / "p")]
    )
    assert b"writing the page of capture 1: " in err and b"%)" in err
    assert err.rstrip().endswith(b"frames laid out)")  # the progress line was cleared
    # reading 60 000 frames for a view can take less than the half second progress waits
    err = _stderr_on_pty(
        ["show", "--db", str(big), "--view", "turns"], {"ACP_PROXY_PROGRESS_AFTER": "0"}
    )
    assert b"reading capture 1: " in err
    err = _stderr_on_pty(  # a --grep that matches nothing prints nothing for a long while
        ["show", "--db", str(big), "--grep", "no such text"], {"ACP_PROXY_PROGRESS_AFTER": "0"}
    )
    assert b"searching capture 1: " in err and b"%)" in err
    assert err.rstrip().endswith(b"no frame matches")  # the progress line was cleared
    fast = {"ACP_PROXY_PROGRESS_AFTER": "0"}  # drawn at once: the small capture will do
    err = _stderr_on_pty(["check", "--db", str(small)], fast, status=1)  # it finds things
    assert b"checking capture 1 (" in err and b"%)" in err
    err = _stderr_on_pty(
        ["export", "--db", str(small), "--format", "jsonl", "-o", str(tmp_path / "e")], fast
    )
    assert b"exporting capture 1: " in err and b"%)" in err
    assert err.rstrip().endswith(b"frames to " + str(tmp_path / "e").encode())
    for fmt, what in (("har", b"exporting"), ("otlp", b"tracing"), ("patch", b"reading")):
        err = _stderr_on_pty(
            ["export", "--db", str(small), "--format", fmt, "-o", str(tmp_path / fmt)], fast
        )
        assert what + b" capture 1: " in err and b"%)" in err, (fmt, err[-300:])
    quiet = subprocess.run(
        [*PROXY, "export", "--db", str(small), "--format", "jsonl", "-o", str(tmp_path / "j")],
        capture_output=True,
        check=True,
        timeout=300,
    )
    assert b"exporting" not in quiet.stderr and b"\r" not in quiet.stderr

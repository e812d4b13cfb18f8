"""A jsonl export with a line that is not one of an export: one clear line naming it, in
every command that reads the file, and never a silently wrong frame."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.paths import RECORDINGS
from support.proc import PROXY

from acp_proxy.errors import UsageError
from acp_proxy.export.jsonl import read_jsonl

GOOD = (RECORDINGS / "demo-v1.jsonl").read_bytes().splitlines()
FRAME = b'{"seq":0,"direction":"c2a","t_ns":1,'

BAD = {
    "array": b"[1, 2]",
    "scalar": b"42",
    "text-not-string": FRAME + b'"text":7}',
    "invalid-base64": FRAME + b'"base64":"!!not base64!!"}',
    "no-seq": b'{"direction":"c2a","t_ns":1,"text":"{}"}',
}


def _file(tmp_path: Path, bad: bytes) -> Path:
    path = tmp_path / "broken.jsonl"
    path.write_bytes(b"\n".join([*GOOD[:3], bad, *GOOD[3:]]) + b"\n")
    return path


@pytest.mark.parametrize("name", sorted(BAD))
def test_read_jsonl_names_the_line(name: str) -> None:
    with pytest.raises(UsageError, match=r"^x\.jsonl line 4: "):
        list(read_jsonl([*GOOD[:3], BAD[name], *GOOD[3:]], name="x.jsonl"))


@pytest.mark.parametrize("name", sorted(BAD))
@pytest.mark.parametrize(
    "command",
    [
        ["show"],
        ["tools"],
        ["export", "--format", "html"],
        ["replay", "agent"],
        ["replay", "client", "--timeout", "5"],
    ],
)
def test_commands_say_which_line(tmp_path: Path, name: str, command: list[str]) -> None:
    path = _file(tmp_path, BAD[name])
    tail = ["--", sys.executable, "-c", "pass"] if command[0] == "replay" else []
    r = subprocess.run(
        [*PROXY, *command, str(path), "--db", str(tmp_path / "x.sqlite"), *tail],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"acp-proxy: error: {path} line 4: "), r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
    max_leaves=8,
)
FIELDS = ["seq", "direction", "t_ns", "text", "base64", "terminated", "opcode", "kind",
          "record", "anomalies", "size", "id", "detail"]  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=6) | JSON,
)
def test_any_json_line_is_a_frame_or_a_usage_error(value: object) -> None:
    base: object = value
    if isinstance(value, dict):
        base = {"seq": 0, "direction": "c2a", "t_ns": 1, "text": "{}", **value}
    line = json.dumps(base).encode()
    try:
        list(read_jsonl([line]))
    except UsageError as e:
        assert str(e).startswith("jsonl line 1: ")

"""Golden tests: real captures and hand-written fixtures against checked-in reconstructions.

``recordings/*.jsonl`` are real captures (the bundled demo; the official Python SDK as both
peers, made by ``recordings/sdk/make_capture.py``); ``tests/data/reconstruct/*.jsonl`` are
hand-written v1/v2 fixtures. Each has an expected reconstruction (every view, the patch
export and each terminal's asciicast) in an ``expected/`` folder beside it. After an
intended change, regenerate them with::

    ACP_PROXY_UPDATE_GOLDEN=1 pytest tests/reconstruct/test_reconstruct_golden.py

and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from support.paths import DATA, ROOT

from acp_proxy.export.core.asciicast import asciicast
from acp_proxy.export.core.patch import session_patch
from acp_proxy.export.jsonl import read_jsonl
from acp_proxy.protocol.frames import Frame
from acp_proxy.reconstruct import reconstruct
from acp_proxy.reconstruct.views import reconstruction_json

CAPTURES = sorted((ROOT / "recordings").glob("*.jsonl")) + sorted(
    (DATA / "reconstruct").glob("*.jsonl")
)


def _frames(path: Path) -> list[Frame]:
    with open(path, "rb") as f:
        return list(read_jsonl(f))


def _golden(frames: list[Frame]) -> Any:
    r = reconstruct(frames)
    patch = session_patch(r)
    value = {
        "reconstruction": reconstruction_json(r),
        "patch": patch.text,
        "patchSkipped": [list(s) for s in patch.skipped],
        "asciicast": {f"{sid} {tid}": asciicast(t) for (sid, tid), t in r.terminals.items()},
    }
    return orjson.loads(orjson.dumps(value))


def _expected_path(capture: Path) -> Path:
    return capture.parent / "expected" / (capture.stem + ".json")


@pytest.mark.parametrize("capture", CAPTURES, ids=[c.name for c in CAPTURES])
def test_reconstruction_matches_the_checked_in_expectation(capture: Path) -> None:
    got = _golden(_frames(capture))
    expected = _expected_path(capture)
    if os.environ.get("ACP_PROXY_UPDATE_GOLDEN"):
        expected.parent.mkdir(exist_ok=True)
        expected.write_bytes(orjson.dumps(got, option=orjson.OPT_INDENT_2) + b"\n")
    assert expected.exists(), f"no expected reconstruction for {capture.name}"
    assert got == orjson.loads(expected.read_bytes())


def test_there_are_real_captures_and_fixtures_for_both_versions() -> None:
    names = {c.name for c in CAPTURES}
    assert {"demo-v1.jsonl", "sdk-v1.jsonl"} <= names
    assert sum(n.startswith("v2-") for n in names) >= 3


def test_a_changed_capture_no_longer_matches() -> None:
    """The comparison can fail: drop one frame from the demo and it must differ."""
    capture = ROOT / "recordings" / "demo-v1.jsonl"
    frames = _frames(capture)
    dropped = [f for f in frames if b"terminal/output" not in f.raw]
    assert len(dropped) < len(frames)
    assert _golden(dropped) != orjson.loads(_expected_path(capture).read_bytes())

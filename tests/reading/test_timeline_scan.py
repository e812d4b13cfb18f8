"""``show --grep`` scans the stored bytes alone and reads whole only the frames that match
(acp_proxy/store/scan.py): the frames it shows are those the pattern matches when every frame
is read whole — hostile bytes, any window, several scan batches, the unanswered flag."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.messages import frame_bytes, frames_of, import_frames

from acp_proxy.reading import open_capture
from acp_proxy.reading.timeline import Timeline
from acp_proxy.store import scan
from acp_proxy.store.reader import StoredFrame
from acp_proxy.text.timeline import Grep


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("scan")


def _shown(frames: list[StoredFrame]) -> list[tuple[int, bytes, tuple[str, ...]]]:
    return [(f.seq, f.raw, f.anomalies) for f in frames]


class _Count:
    def __init__(self) -> None:
        self.read = 0

    def advance(self, n: int = 1) -> None:
        self.read += n

    def clear(self) -> None:
        pass


@settings(max_examples=40, deadline=None)
@given(
    st.lists(frame_bytes(), min_size=1, max_size=25),
    st.sampled_from(["session", "Prompt", "tool_call", "\\d{3}", "é|\ufffd", "^\\s", "zz"]),
    st.one_of(st.none(), st.integers(0, 30)),
    st.one_of(st.none(), st.integers(0, 30)),
)
def test_the_frames_scanned_are_those_the_pattern_matches_read_whole(
    work: Path,
    items: list[tuple[object, bytes, object]],
    pattern: str,
    from_seq: int | None,
    at: int | None,
) -> None:
    db = work / f"scan-{len(list(work.iterdir()))}.sqlite"
    cid = import_frames(db, frames_of(items), work)  # type: ignore[arg-type]
    grep = Grep(pattern)
    with pytest.MonkeyPatch.context() as mp, open_capture(db, str(cid)) as cap:
        mp.setattr(scan, "BATCH", 4)  # several batches of a small capture
        whole = Timeline(cap, from_seq=from_seq, at=at, keep=grep)
        count = _Count()
        scanned = Timeline(cap, from_seq=from_seq, at=at, scan=grep.raw, progress=count)
        assert _shown(list(scanned.frames())) == _shown(list(whole.frames()))
        # every frame of the window was read by the scan, once: what the progress counts
        assert cap.ended and count.read == len(list(whole.cap.store.frames(
            cid, after_seq=(from_seq or 0) - 1, upto_seq=at)))  # fmt: skip

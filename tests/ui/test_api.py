"""What the inspector's routes compute, on a real recorded database: the fold limit that
keeps the server's memory bounded, and a live capture folded incrementally."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from support.proc import PROXY

from acp_proxy.errors import UsageError
from acp_proxy.reconstruct import reconstruct
from acp_proxy.reconstruct.views import tools_json
from acp_proxy.store.reader import Store
from acp_proxy.ui.api import Folds, check_foldable, frames_page


@pytest.fixture
def demo(db: Path) -> Store:
    subprocess.run([*PROXY, "demo", "--db", str(db)], check=True, capture_output=True)
    return Store(db, readonly=True)


def test_fold_limit(demo: Store) -> None:
    check_foldable(demo, 1, limit=46)
    check_foldable(demo, 1, at=9, limit=10)
    with pytest.raises(UsageError, match=r"46 frames.*acp-proxy show 1 --view"):
        check_foldable(demo, 1, limit=45)
    with pytest.raises(UsageError, match="11 frames"):
        check_foldable(demo, 1, at=10, limit=10)


def test_incremental_fold_is_the_whole_fold(demo: Store, db: Path) -> None:
    folds = Folds()
    whole = tools_json(reconstruct(sf.frame for sf in demo.frames(1)))
    # the fold kept from an earlier look at the first 20 frames, then brought up to date
    r = reconstruct((sf.frame for sf in demo.frames(1, upto_seq=19)), at=19)
    folds._folds[1] = (r, 19)
    assert folds.view(demo, 1, "tools") == whole
    assert folds.view(demo, 1, "tools", at=12) == tools_json(
        reconstruct((sf.frame for sf in demo.frames(1)), at=12)
    )


def test_frames_page_scans_a_bounded_number(demo: Store) -> None:
    from acp_proxy.text.timeline import FrameFilter

    page = frames_page(demo, 1, flt=FrameFilter(method="no/such"))
    assert page == {"frames": [], "next": 45, "done": True, "scanned": 46}
    page = frames_page(demo, 1, after=40, limit=2)
    assert [f["seq"] for f in page["frames"]] == [41, 42] and not page["done"]

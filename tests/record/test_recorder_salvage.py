"""A batch the database refuses for one of its values is stored row by row (salvage); a
database failure on the way leaves the rows not yet stored for the next try, and the
recorder goes on. The database is real; only the order of its failures is scripted."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from acp_proxy.protocol.jsonrpc import classify
from acp_proxy.record.core.rows import FrameRow, OpenRow, Row
from acp_proxy.record.recorder import Recorder
from acp_proxy.record.sqlite import Database


class _Scripted(Database):
    """Raises, for each call of :meth:`write` in turn, what ``script`` says (None: write)."""

    def __init__(self, path: Path, script: list[BaseException | None]) -> None:
        super().__init__(path)
        self.script = script

    def write(self, rows: Sequence[Row], journal: str | None = None, position: Any = None) -> None:
        failure = self.script.pop(0) if self.script else None
        if failure is not None:
            raise failure
        super().write(rows, journal, position)


def _frame(seq: int) -> FrameRow:
    raw = b'{"jsonrpc":"2.0","method":"_n","params":{"i":%d}}' % seq
    info = classify(raw)
    return FrameRow("u1", seq, "c2a", seq, raw, True, None, info, info.anomalies)


def test_a_database_error_during_salvage_keeps_the_rest_for_the_next_try(
    tmp_path: Path,
) -> None:
    db_path = tmp_path / "r.sqlite"
    warnings: list[str] = []
    recorder = Recorder(db_path, "j1", -1, warn=warnings.append)
    recorder.db = _Scripted(
        db_path,
        [
            OverflowError("a value too big"),  # the batch: store it row by row
            None,  # the open row
            None,  # frame 0
            sqlite3.OperationalError("disk I/O error"),  # frame 1: the database fails
        ],
    )
    recorder._rows = [OpenRow("u1", {"uid": "u1", "transport": "stdio"}), *map(_frame, range(3))]
    assert recorder._try_commit() is False  # not raised: kept, to be tried again
    assert [r.seq for r in recorder._rows if isinstance(r, FrameRow)] == [1, 2]
    recorder._next_try = time.monotonic()  # the retry's pause is over
    assert recorder._try_commit() is True
    assert recorder._rows == []
    recorder.db.close()
    stored = sqlite3.connect(db_path).execute("SELECT seq FROM messages ORDER BY seq").fetchall()
    assert stored == [(0,), (1,), (2,)]
    assert any("disk I/O error" in w for w in warnings)
    assert any("recording to" in w and "again" in w for w in warnings)

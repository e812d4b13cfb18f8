"""The demo's capture for tests that read one: ``acp-proxy demo`` runs once per test
process, and each test gets a copy of its database in milliseconds instead of a run of its
own (a client, an agent, a proxy and a recorder: most of a second). Tests of the demo or of
recording itself run the demo, not this."""

from __future__ import annotations

import atexit
import shutil
import sqlite3
import stat
import subprocess
import tempfile
from pathlib import Path

from support.proc import PROXY

_recorded: Path | None = None


def _recording() -> Path:
    global _recorded
    if _recorded is None:
        where = Path(tempfile.mkdtemp(prefix="acp-proxy-demo-"))  # 0700
        atexit.register(shutil.rmtree, where, True)
        db = where / "demo.sqlite"
        subprocess.run([*PROXY, "demo", "--db", str(db)], check=True, capture_output=True,
                       timeout=120)  # fmt: skip
        assert stat.S_IMODE(db.stat().st_mode) == 0o600  # as the demo made it
        _recorded = db
    return _recorded


def demo_database(db: Path) -> Path:
    """``db`` made a database holding the demo's capture (mode 0600), as ``acp-proxy demo
    --db DB`` leaves a new one."""
    source = sqlite3.connect(f"file:{_recording()}?mode=ro", uri=True)
    target = sqlite3.connect(db)
    try:
        source.backup(target)
    finally:
        target.close()
        source.close()
    db.chmod(0o600)
    return db

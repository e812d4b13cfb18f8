"""The embedded demo: a bundled client and agent talking through ``acp-proxy record``.

``run_demo(db)`` runs ``acp_proxy.demo.client`` as the editor, with ``acp-proxy record -- python
-m acp_proxy.demo.agent`` as its agent command, and returns the id of the capture it made.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from acp_proxy.demo import client
from acp_proxy.errors import LocalError
from acp_proxy.store.reader import Store

__all__ = ["proxy_argv", "run_demo"]

AGENT = [sys.executable, "-m", "acp_proxy.demo.agent"]


def proxy_argv(db: Path, *agent: str, label: str = "demo") -> list[str]:
    """The agent command an editor would configure: the proxy wrapping ``agent``."""
    return [
        sys.executable,
        "-m",
        "acp_proxy",
        "record",
        "--db",
        str(db),
        "--label",
        label,
        "--",
        *agent,
    ]


def run_demo(db: Path) -> int:
    with tempfile.TemporaryDirectory(prefix="acp-demo-") as tmp:
        code, proxy_pid = client.run(proxy_argv(db, *AGENT), Path(tmp))
    if code != 0:
        raise LocalError(f"the demo session did not go as expected (client exit {code})")
    store = Store(db)
    try:
        rows = store.dicts(
            "SELECT id FROM captures WHERE proxy_pid = ? ORDER BY id DESC LIMIT 1", [proxy_pid]
        )
    finally:
        store.close()
    if not rows:
        raise LocalError(f"the demo ran but no capture was recorded in {db}")
    return int(rows[0]["id"])

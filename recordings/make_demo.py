"""Record ``recordings/demo-v1.jsonl``: the bundled demo client and agent, via the proxy.

Usage (from the repository root)::

    python recordings/make_demo.py

The agent is started as ``python3 -m acp_proxy.demo.agent`` (found on ``PATH``, where a
shim that runs this interpreter comes first), so the sample names no path of the machine
it was made on: the proxy and the workspace run in a temporary directory.
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from acp_proxy.demo import client, proxy_argv

OUT = Path(__file__).resolve().parent / "demo-v1.jsonl"


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="acp-demo-") as tmp:
        base = Path(tmp)
        bin_dir = base / "bin"
        bin_dir.mkdir()
        shim = bin_dir / "python3"
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
        shim.chmod(0o755)
        os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
        db = base / "demo.sqlite"
        workspace = base / "workspace"
        workspace.mkdir()
        os.chdir(workspace)
        argv = proxy_argv(db, "python3", "-m", "acp_proxy.demo.agent")
        code, _pid = client.run(["python3", *argv[1:]], workspace)
        if code != 0:
            raise SystemExit(f"the demo session failed (client exit {code})")
        subprocess.run(
            ["python3", "-m", "acp_proxy", "export", "--db", str(db), "-o", str(OUT)], check=True
        )


if __name__ == "__main__":
    main()

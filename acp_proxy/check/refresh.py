"""Refresh the bundled ACP JSON Schemas (a maintainer's tool).

::

    python -m acp_proxy.check.refresh SOURCE --version TEXT [--origin TEXT] [--dest DIR]

SOURCE is a directory or a URL holding ``v1/`` and ``v2/`` (or ``schema/v1/``...) with
``schema.json``, ``schema.unstable.json``, ``meta.json`` and ``meta.unstable.json`` — for
example a checkout of the official repository, or the ``schema`` folder of the SDK package.
Each file must parse, carry ``x-method`` annotations (the schemas) and compile; then the
files replace the bundled ones and ``PROVENANCE.json`` is rewritten with where they came
from, the version given and the sha256 of each. Nothing is replaced when one file fails.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import urllib.request
from pathlib import Path
from typing import Any

__all__ = ["main", "refresh"]

REPOSITORY = "https://github.com/agentclientprotocol/agent-client-protocol"
NAMES = ("schema.json", "schema.unstable.json", "meta.json", "meta.unstable.json")
BUNDLE = Path(__file__).parent / "schemas"


def _read(source: str, rel: str) -> bytes:
    if source.startswith(("http://", "https://")):
        url = source.rstrip("/") + "/" + rel
        with urllib.request.urlopen(url, timeout=60) as r:
            data: bytes = r.read()
            return data
    base = Path(source)
    for candidate in (base / rel, base / "schema" / rel):
        if candidate.is_file():
            return candidate.read_bytes()
    raise FileNotFoundError(f"{rel} not found under {source}")


def _check(rel: str, data: bytes) -> None:
    doc: Any = json.loads(data)
    if not isinstance(doc, dict):
        raise ValueError(f"{rel}: not a JSON object")
    if rel.endswith(("schema.json", "schema.unstable.json")):
        defs = doc.get("$defs")
        if not isinstance(defs, dict) or not any(
            isinstance(d, dict) and "x-method" in d for d in defs.values()
        ):
            raise ValueError(f"{rel}: no $defs with x-method annotations")
        import jsonschema_rs

        jsonschema_rs.validator_map_for(doc, offline=True)


def refresh(
    source: str, version: str, origin: str | None = None, dest: Path = BUNDLE
) -> dict[str, Any]:
    """Fetch, check and install every file; the new provenance."""
    files: dict[str, bytes] = {}
    for v in ("v1", "v2"):
        for name in NAMES:
            rel = f"{v}/{name}"
            data = _read(source, rel)
            _check(rel, data)
            files[rel] = data
    provenance: dict[str, Any] = {
        "repository": REPOSITORY,
        "license": "Apache-2.0",
        "files": {
            rel: {
                "origin": f"{origin or source}/{rel}",
                "version": version,
                "sha256": hashlib.sha256(data).hexdigest(),
            }
            for rel, data in files.items()
        },
    }
    for rel, data in files.items():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    (dest / "PROVENANCE.json").write_text(json.dumps(provenance, indent=2) + "\n")
    return provenance


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m acp_proxy.check.refresh")
    parser.add_argument("source", help="directory or URL holding v1/ and v2/")
    parser.add_argument("--version", required=True, help="the release the files belong to")
    parser.add_argument("--origin", help="where SOURCE came from, for the provenance")
    parser.add_argument("--dest", type=Path, default=BUNDLE, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        p = refresh(args.source, args.version, args.origin, args.dest)
    except (OSError, ValueError) as e:
        print(f"refresh: error: {e}", file=sys.stderr)
        return 1
    for rel, entry in p["files"].items():
        print(f"{entry['sha256']}  {rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Refresh the bundled ACP JSON Schemas (a maintainer's tool).

::

    python -m acp_proxy.check.refresh SOURCE --version TEXT [--origin TEXT] [--dest DIR]

SOURCE holds ``v1/`` and ``v2/`` (or ``schema/v1/``..., or ``package/schema/v1/``...) with
``schema.json`` and ``schema.unstable.json``: a checkout of the official repository, a URL
serving the same layout, or the tarball ``npm pack @agentclientprotocol/sdk@X`` writes
(``.tgz``). Each schema must parse, carry ``x-method`` annotations and compile. The method
tables ``meta.json`` and ``meta.unstable.json`` are derived from those annotations, so the
schemas and the tables always come from the same release (an upstream ``meta.json`` from
another commit listed methods its schemas had dropped). Then the files replace the bundled
ones and ``PROVENANCE.json`` is rewritten with where they came from, the version given and
the sha256 of each. Nothing is replaced when one file fails.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tarfile
import urllib.request
from pathlib import Path
from typing import Any

__all__ = ["derive_meta", "main", "refresh"]

REPOSITORY = "https://github.com/agentclientprotocol/agent-client-protocol"
SCHEMAS = ("schema.json", "schema.unstable.json")
BUNDLE = Path(__file__).parent / "core" / "schemas"
_TABLES = {
    "agent": "agentMethods",
    "client": "clientMethods",
    "protocol": "protocolMethods",
    "proxy": "proxyMethods",
}


def _read(source: str, rel: str) -> bytes:
    if source.startswith(("http://", "https://")):
        url = source.rstrip("/") + "/" + rel
        with urllib.request.urlopen(url, timeout=60) as r:
            data: bytes = r.read()
            return data
    base = Path(source)
    if base.is_file() and base.name.endswith((".tgz", ".tar.gz")):
        with tarfile.open(base, "r:gz") as tar:
            for name in (f"package/schema/{rel}", f"schema/{rel}", rel):
                try:
                    member = tar.extractfile(name)
                except KeyError:
                    continue
                if member is not None:
                    return member.read()
        raise FileNotFoundError(f"{rel} not found in {source}")
    for candidate in (base / rel, base / "schema" / rel, base / "package" / "schema" / rel):
        if candidate.is_file():
            return candidate.read_bytes()
    raise FileNotFoundError(f"{rel} not found under {source}")


def _check(rel: str, data: bytes) -> dict[str, Any]:
    doc: Any = json.loads(data)
    if not isinstance(doc, dict):
        raise ValueError(f"{rel}: not a JSON object")
    defs = doc.get("$defs")
    if not isinstance(defs, dict) or not any(
        isinstance(d, dict) and "x-method" in d for d in defs.values()
    ):
        raise ValueError(f"{rel}: no $defs with x-method annotations")
    import jsonschema_rs

    jsonschema_rs.validator_map_for(doc, offline=True)
    return doc


def derive_meta(schema: dict[str, Any], version: int) -> dict[str, Any]:
    """The method tables of one schema, from its ``x-method``/``x-side`` annotations, in the
    layout of the official ``meta.json`` (one table per side that handles the method)."""
    meta: dict[str, Any] = {"version": version}
    for name in _TABLES.values():
        meta[name] = {}
    for d in schema.get("$defs", {}).values():
        if not isinstance(d, dict) or not isinstance(d.get("x-method"), str):
            continue
        table = _TABLES.get(str(d.get("x-side")))
        if table is not None:
            method = d["x-method"]
            meta[table][method.replace("$/", "").replace("/", "_")] = method
    for name in _TABLES.values():
        meta[name] = dict(sorted(meta[name].items()))
    return meta


def refresh(
    source: str, version: str, origin: str | None = None, dest: Path = BUNDLE
) -> dict[str, Any]:
    """Fetch, check and install every file; the new provenance."""
    files: dict[str, bytes] = {}
    where: dict[str, str] = {}
    for v in ("v1", "v2"):
        for name in SCHEMAS:
            rel = f"{v}/{name}"
            data = _read(source, rel)
            doc = _check(rel, data)
            files[rel] = data
            where[rel] = f"{origin or source}/{rel}"
            meta_rel = rel.replace("schema", "meta")
            meta = derive_meta(doc, int(v[1:]))
            files[meta_rel] = (json.dumps(meta, indent=2) + "\n").encode()
            where[meta_rel] = f"derived from the x-method annotations of {where[rel]}"
    provenance: dict[str, Any] = {
        "repository": REPOSITORY,
        "license": "Apache-2.0",
        "files": {
            rel: {
                "origin": where[rel],
                "version": version,
                "sha256": hashlib.sha256(data).hexdigest(),
            }
            for rel, data in sorted(files.items())
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
    parser.add_argument("source", help="directory, URL or npm tarball holding v1/ and v2/")
    parser.add_argument("--version", required=True, help="the release the files belong to")
    parser.add_argument("--origin", help="where SOURCE came from, for the provenance")
    parser.add_argument("--dest", type=Path, default=BUNDLE, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        p = refresh(args.source, args.version, args.origin, args.dest)
    except (OSError, ValueError, tarfile.TarError) as e:
        print(f"refresh: error: {e}", file=sys.stderr)
        return 1
    for rel, entry in p["files"].items():
        print(f"{entry['sha256']}  {rel}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The bundled schemas: provenance that matches the bytes, a refresh that checks what it
installs, and a method index that agrees with the official method tables."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from acp_proxy.check.core.schemas import FILES, load_schemas
from acp_proxy.check.refresh import BUNDLE, main

NAMES = [
    f"{v}/{n}"
    for v in ("v1", "v2")
    for n in ("schema.json", "schema.unstable.json", "meta.json", "meta.unstable.json")
]


def test_provenance_matches_every_bundled_file() -> None:
    prov = json.loads((BUNDLE / "PROVENANCE.json").read_text())
    assert prov["repository"] == "https://github.com/agentclientprotocol/agent-client-protocol"
    assert sorted(prov["files"]) == sorted(NAMES)
    for rel, entry in prov["files"].items():
        assert hashlib.sha256((BUNDLE / rel).read_bytes()).hexdigest() == entry["sha256"], rel
        assert entry["version"] and entry["origin"]
    assert set(FILES.values()) <= set(prov["files"])


def test_the_index_has_every_method_of_the_official_tables() -> None:
    for version in (1, 2):
        schemas = load_schemas(version)
        assert schemas is not None
        meta = json.loads((BUNDLE / f"v{version}" / "meta.json").read_text())
        for table, sender in (
            ("agentMethods", "client"),
            ("clientMethods", "agent"),
            ("protocolMethods", "client"),
        ):
            for method in meta[table].values():
                assert schemas.lookup(method, sender) is not None, (version, method)
        assert schemas.lookup("session/prompt", "agent") is None  # the wrong direction
    assert load_schemas(3) is None


def test_a_failed_union_is_explained_by_its_branch() -> None:
    s = load_schemas(2)
    assert s is not None
    bad = {
        "sessionId": "s",
        "update": {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "x"},
        },
    }
    assert not s.is_valid("UpdateSessionNotification", bad)
    (reason,) = s.explain("UpdateSessionNotification", bad)
    assert reason.startswith(".update") and '"messageId" is a required property' in reason
    other = {"sessionId": "s", "update": {"sessionUpdate": "_custom_kind", "x": 1}}
    assert s.is_valid("UpdateSessionNotification", other)  # v2's "other" branch


def _source(tmp_path: Path, layout: str) -> Path:
    src = tmp_path / "src"
    for rel in NAMES:
        target = src / layout / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(BUNDLE / rel, target)
    return src


@pytest.mark.parametrize("layout", ["", "schema"])
def test_refresh_installs_and_rewrites_the_provenance(tmp_path: Path, layout: str) -> None:
    src = _source(tmp_path, layout)
    data = json.loads((src / layout / "v2/schema.json").read_text())
    data["$defs"]["_Added"] = {"type": "object"}
    (src / layout / "v2/schema.json").write_text(json.dumps(data))
    dest = tmp_path / "dest"
    assert main([str(src), "--version", "9.9.9", "--origin", "test", "--dest", str(dest)]) == 0
    prov = json.loads((dest / "PROVENANCE.json").read_text())
    entry = prov["files"]["v2/schema.json"]
    new = (dest / "v2/schema.json").read_bytes()
    assert entry == {
        "origin": "test/v2/schema.json",
        "version": "9.9.9",
        "sha256": hashlib.sha256(new).hexdigest(),
    }
    assert b"_Added" in new


def test_refresh_refuses_a_broken_file_and_replaces_nothing(tmp_path: Path) -> None:
    src = _source(tmp_path, "")
    (src / "v1/schema.unstable.json").write_text('{"$defs": {}}')
    dest = tmp_path / "dest"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "acp_proxy.check.refresh",
            str(src),
            "--version",
            "x",
            "--dest",
            str(dest),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1 and "no $defs with x-method" in proc.stderr
    assert not dest.exists()


def test_refresh_reads_an_npm_tarball_and_derives_the_method_tables(tmp_path: Path) -> None:
    import tarfile

    tgz = tmp_path / "sdk.tgz"
    with tarfile.open(tgz, "w:gz") as tar:
        for v in ("v1", "v2"):
            for n in ("schema.json", "schema.unstable.json"):
                tar.add(BUNDLE / v / n, arcname=f"package/schema/{v}/{n}")
    dest = tmp_path / "dest"
    assert main([str(tgz), "--version", "2.4.0", "--origin", "npm", "--dest", str(dest)]) == 0
    prov = json.loads((dest / "PROVENANCE.json").read_text())
    assert sorted(prov["files"]) == sorted(NAMES)
    assert prov["files"]["v1/meta.json"]["origin"].startswith("derived from the x-method")
    meta = json.loads((dest / "v1/meta.unstable.json").read_text())
    assert "proxy/successor" in meta["proxyMethods"].values()
    assert "auth/status" in meta["agentMethods"].values()
    assert "nes/start" not in meta["agentMethods"].values()
    # the bundled tables are exactly what the bundled schemas say
    for rel in ("v1/meta.json", "v1/meta.unstable.json", "v2/meta.json", "v2/meta.unstable.json"):
        assert (dest / rel).read_bytes() == (BUNDLE / rel).read_bytes(), rel


def test_newer_json_adds_only_what_the_bundled_schemas_lack() -> None:
    """When a refreshed schema defines an entry itself, this fails: drop it from newer.json."""
    newer = json.loads((BUNDLE / "newer.json").read_text())
    for version in (1, 2):
        stable = load_schemas(version)
        assert stable is not None
        entry = newer[f"v{version}"]
        assert entry["pages"]
        for name in entry.get("add_defs", {}):
            assert name not in stable.root["$defs"], (version, name)
        for name, props in entry.get("add_properties", {}).items():
            for key in props:
                assert key not in stable.root["$defs"][name]["properties"], (version, key)
    v1 = load_schemas(1)
    n1 = load_schemas(1, newer=True)
    assert v1 is not None and n1 is not None
    child = {"sessionUpdate": "subagent_update", "sessionId": "c1", "title": "review"}
    linked = {
        "sessionUpdate": "tool_call",
        "toolCallId": "t1",
        "title": "delegate",
        "content": [{"type": "session", "sessionId": "c1"}],
    }
    for u in (child, linked):
        note = {"sessionId": "s1", "update": u}
        assert not v1.is_valid("SessionNotification", note)
        assert n1.is_valid("SessionNotification", note)
    assert not n1.is_valid(
        "SessionNotification",
        {"sessionId": "s1", "update": {**linked, "content": [{"type": "session"}]}},
    )
    n2 = load_schemas(2, newer=True)
    assert n2 is not None
    prompt = {"sessionId": "s1", "prompt": [{"type": "text", "text": "x"}]}
    assert n2.is_valid("PromptRequest", {**prompt, "idempotencyKey": "k-1"})
    assert not n2.is_valid("PromptRequest", {**prompt, "idempotencyKey": ""})

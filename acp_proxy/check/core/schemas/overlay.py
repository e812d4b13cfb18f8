"""What newer spec pages define over the bundled schemas (pure, values in and out).

What belongs here: applying ``newer.json`` — definitions, union branches and properties
that ACP spec pages newer than the bundled schema files name (subagents stabilised in v1,
``replay_complete`` and ``idempotencyKey`` in v2) — to a copy of a bundled schema. A message
that only the result accepts is valid ACP as the newest spec describes it, so ``check``
notes it (``schema.newer``) and never calls it an error (docs/check.md). Branches are copied
from the unstable schema where it already has them, with every definition they refer to,
so the shapes are upstream's own; what no file has yet is written in ``newer.json`` from
the spec text, with the page named.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["apply_newer", "union"]

_DISCRIMINATORS = ("sessionUpdate", "type")


def union(node: dict[str, Any]) -> list[Any] | None:
    """The list of branches of a ``oneOf``/``anyOf`` definition."""
    for key in ("oneOf", "anyOf"):
        if isinstance(node.get(key), list):
            branches: list[Any] = node[key]
            return branches
    return None


def _const(branch: Any) -> Any:
    props = branch.get("properties", {}) if isinstance(branch, dict) else {}
    for key in _DISCRIMINATORS:
        p = props.get(key)
        if isinstance(p, dict) and "const" in p:
            return p["const"]
    return None


def _refs(node: Any, out: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            out.add(ref[len("#/$defs/") :])
        for v in node.values():
            _refs(v, out)
    elif isinstance(node, list):
        for v in node:
            _refs(v, out)


def _copy_refs(node: Any, source: dict[str, Any], defs: dict[str, Any]) -> None:
    """Copy into ``defs`` every definition ``node`` needs that ``defs`` lacks."""
    todo: set[str] = set()
    _refs(node, todo)
    while todo:
        name = todo.pop()
        if name in defs or name not in source:
            continue
        defs[name] = copy.deepcopy(source[name])
        _refs(defs[name], todo)


def _add_branch(node: dict[str, Any], branch: dict[str, Any]) -> None:
    """Add ``branch`` to a union; a v2 catch-all ("other") branch, which excludes the known
    values and stays last, is told to exclude this one too."""
    branches = union(node)
    if branches is None:
        return
    value = _const(branch)
    other = branches[-1] if branches and isinstance(branches[-1], dict) else {}
    excluded = union(other.get("not", {})) if isinstance(other.get("not"), dict) else None
    if excluded is None:
        branches.append(branch)
        return
    if value is not None:
        key = next((k for k in _DISCRIMINATORS if k in other.get("properties", {})), "type")
        excluded.append(
            {"type": "object", "properties": {key: {"const": value}}, "required": [key]}
        )
    branches.insert(len(branches) - 1, branch)


def apply_newer(
    stable: dict[str, Any], unstable: dict[str, Any], patch: dict[str, Any]
) -> dict[str, Any]:
    """A copy of ``stable`` with ``patch`` (one version's entry of ``newer.json``) applied."""
    doc = copy.deepcopy(stable)
    defs: dict[str, Any] = doc["$defs"]
    source: dict[str, Any] = unstable.get("$defs", {})
    for name, d in patch.get("add_defs", {}).items():
        defs.setdefault(name, copy.deepcopy(d))
    for name, values in patch.get("copy_branches", {}).items():
        for branch in union(source.get(name, {})) or []:
            if _const(branch) in values and name in defs:
                _copy_refs(branch, source, defs)
                _add_branch(defs[name], copy.deepcopy(branch))
    for name, branches in patch.get("add_branches", {}).items():
        for branch in branches:
            if name in defs:
                _copy_refs(branch, source, defs)
                _add_branch(defs[name], copy.deepcopy(branch))
    for name, keys in patch.get("copy_properties", {}).items():
        props = defs.get(name, {}).get("properties")
        for key in keys:
            node = source.get(name, {}).get("properties", {}).get(key)
            if isinstance(props, dict) and node is not None:
                _copy_refs(node, source, defs)
                props.setdefault(key, copy.deepcopy(node))
    for name, new in patch.get("add_properties", {}).items():
        props = defs.get(name, {}).get("properties")
        if isinstance(props, dict):
            for key, node in new.items():
                props.setdefault(key, copy.deepcopy(node))
    return doc

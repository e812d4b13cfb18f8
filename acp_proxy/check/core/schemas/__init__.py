"""The bundled ACP JSON Schemas and the validators compiled from them.

What belongs here: finding, for a message, the schema definition it must match — by
protocol version, direction and method, read from the ``x-method``/``x-side`` annotations of
the official schema files bundled beside this module (``PROVENANCE.json`` says where each
came from, with its checksum; ``python -m acp_proxy.check.refresh`` refreshes them) — and
validating against it.

Each schema file is compiled once, on first use, into one validator per definition
(``jsonschema_rs.validator_map_for``); a message is then validated against the one
definition its method names, never against the whole ``anyOf`` of every message. When a
union fails, :meth:`Schemas.explain` follows the branch whose discriminator (``type``,
``sessionUpdate``...) the value names, so the reason given is the real one ("messageId is a
required property"), not "not valid under any of the schemas".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

import jsonschema_rs

from acp_proxy.check.core.schemas.overlay import apply_newer

__all__ = ["FILES", "MethodType", "Schemas", "load_schemas"]

FILES = {
    (1, False): "v1/schema.json",
    (1, True): "v1/schema.unstable.json",
    (2, False): "v2/schema.json",
    (2, True): "v2/schema.unstable.json",
}
_DISCRIMINATORS = ("sessionUpdate", "type", "outcome", "operation", "state", "mode", "action")


@dataclass(frozen=True, slots=True)
class MethodType:
    """The definitions of one method: what its params and its result must match, and who
    handles it (``agent``: the client sends it; ``client``: the agent sends it;
    ``protocol``: either)."""

    method: str
    side: str
    request: str | None = None  # params of a request
    notification: str | None = None  # params of a notification
    response: str | None = None  # result of a response


def _index(root: dict[str, Any]) -> dict[tuple[str, str], MethodType]:
    """(method, side) -> its definitions, from the ``x-method``/``x-side`` annotations."""
    parts: dict[tuple[str, str], dict[str, str]] = {}
    for name, d in root.get("$defs", {}).items():
        if not isinstance(d, dict) or "x-method" not in d:
            continue
        method, side = d["x-method"], d.get("x-side", "")
        if side not in ("agent", "client", "protocol", "proxy"):
            continue
        slot = parts.setdefault((method, side), {})
        for suffix, role in (
            ("Notification", "notification"),
            ("Request", "request"),
            ("Response", "response"),
        ):
            if name.endswith(suffix):
                slot[role] = name
                break
    return {
        key: MethodType(key[0], key[1], v.get("request"), v.get("notification"), v.get("response"))
        for key, v in parts.items()
    }


def _pointer(parts: list[str | int]) -> str:
    return "#/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in parts)


class Schemas:
    """One schema file: its method index and its compiled validators."""

    def __init__(self, root: dict[str, Any], name: str = "") -> None:
        self.name = name
        self.root = root
        self.methods = _index(root)
        self._map: Any = None
        self._lookups: dict[tuple[str, str], MethodType | None] = {}
        self._validator: dict[str, Any] = {}

    def _validators(self) -> Any:
        if self._map is None:
            self._map = jsonschema_rs.validator_map_for(
                self.root, validate_formats=False, offline=True
            )
        return self._map

    def lookup(self, method: str, sender: str) -> MethodType | None:
        """The method as sent by ``sender`` (``client`` or ``agent``)."""
        key = (method, sender)
        try:
            return self._lookups[key]
        except KeyError:
            pass
        handler = "agent" if sender == "client" else "client"
        found = (
            self.methods.get((method, handler))
            or self.methods.get((method, "protocol"))
            or self.methods.get((method, "proxy"))  # a conductor and a proxy: either way
        )
        if len(self._lookups) < 4096:  # method names come from peers: bounded
            self._lookups[key] = found
        return found

    def handled_by(self, method: str) -> set[str]:
        return {side for (m, side) in self.methods if m == method}

    def is_valid(self, definition: str, value: Any) -> bool:
        v = self._validator.get(definition)
        if v is None:
            v = self._validator[definition] = self._validators().get(f"#/$defs/{definition}")
        try:
            return v is None or bool(v.is_valid(value))
        except (ValueError, OverflowError, RecursionError):  # a value it cannot take in
            return False

    def explain(self, definition: str, value: Any, limit: int = 3) -> list[str]:
        """Why ``value`` fails ``definition``: at most ``limit`` reasons, each with the path
        of the offending field."""
        return self._explain(f"#/$defs/{definition}", value, [], limit, 0)

    def _explain(
        self, pointer: str, value: Any, at: list[str | int], limit: int, depth: int
    ) -> list[str]:
        v = self._validators().get(pointer)
        if v is None:
            return []
        out: list[str] = []
        try:
            for err in v.iter_errors(value):
                where = [*at, *err.instance_path]
                deeper = self._branch(list(err.schema_path), err.instance, where, limit, depth)
                out.extend(deeper or [_reason(where, err.message)])
                if len(out) >= limit:
                    break
        except (ValueError, OverflowError, RecursionError) as e:
            out.append(_reason(at, f"cannot be validated ({e})"))
        return out[:limit]

    def _branch(
        self,
        schema_path: list[str | int],
        instance: Any,
        where: list[str | int],
        limit: int,
        depth: int,
    ) -> list[str]:
        """For a failed ``anyOf``/``oneOf``, the errors of the branch the value's
        discriminator selects (none when no branch is selected)."""
        if depth > 8 or not schema_path or schema_path[-1] not in ("anyOf", "oneOf"):
            return []
        node: Any = self.root
        for part in schema_path:
            try:
                node = node[part]
            except (KeyError, IndexError, TypeError):
                return []
        if not isinstance(node, list) or not isinstance(instance, dict):
            return []
        for i, branch in enumerate(node):
            if _selects(branch, instance):
                return self._explain(_pointer([*schema_path, i]), instance, where, limit, depth + 1)
        return []


def _selects(branch: Any, instance: dict[str, Any]) -> bool:
    if not isinstance(branch, dict):
        return False
    props = branch.get("properties")
    if not isinstance(props, dict):
        return False
    for key in _DISCRIMINATORS:
        p = props.get(key)
        if isinstance(p, dict) and "const" in p and key in instance:
            return bool(instance[key] == p["const"])
    return False


def _reason(where: list[str | int], message: str) -> str:
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in where) or "(message)"
    if len(message) > 300:
        message = message[:300] + "…"
    return f"{path}: {message}"


_CACHE: dict[tuple[int, bool | str], Schemas] = {}


def _read(name: str) -> Any:
    return json.loads(resources.files(__package__).joinpath(name).read_text("utf-8"))


def load_schemas(version: int, unstable: bool = False, *, newer: bool = False) -> Schemas | None:
    """The bundled schema of ``version`` (1 or 2), or None for a version we have none of.
    With ``newer``: the stable schema with what newer spec pages define applied
    (``newer.json``, :mod:`acp_proxy.check.core.schemas.overlay`)."""
    if (version, unstable) not in FILES:
        return None
    key: tuple[int, bool | str] = (version, "newer") if newer else (version, unstable)
    if key not in _CACHE:
        if newer:
            patch = _read("newer.json").get(f"v{version}", {})
            doc = apply_newer(_read(FILES[version, False]), _read(FILES[version, True]), patch)
            _CACHE[key] = Schemas(doc, f"{FILES[version, False]} + newer.json")
        else:
            _CACHE[key] = Schemas(_read(FILES[version, unstable]), FILES[version, unstable])
    return _CACHE[key]

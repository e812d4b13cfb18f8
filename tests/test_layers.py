"""The layering rule of the design: a module imports only from layers below (or its own),
and layers 0-1 never import asyncio, sqlite3, websockets or click."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "proxy"

LAYERS = {
    "framing": 0,
    "events": 0,
    "errors": 0,
    "jsonrpc": 1,
    "reconstruct": 1,
    "transports": 2,
    "recorder": 2,
    "recorder_child": 2,
    "sink": 2,
    "store": 2,
    "relay": 3,
    "replay": 3,
    "ws_relay": 3,
    "ws_serve": 3,
    "cli": 4,
    "report": 4,
    "export": 4,
    "views_report": 4,
    "html_report": 4,
    "demo": 4,
}
IO_MODULES = {"asyncio", "sqlite3", "websockets", "click", "sqlite_utils", "subprocess"}


def _layer(module: str) -> int:
    """Layer of a module path relative to the package, like 'reconstruct.tools'."""
    head = module.split(".")[0]
    for name, layer in LAYERS.items():
        if head == name or head.startswith(name + "_"):
            return layer
    raise AssertionError(f"proxy/{module.replace('.', '/')} has no layer in tests/test_layers.py")


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        if parts:
            out.append((".".join(parts), path))
    return out


def _imports(module: str, path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    package = module.split(".")[:-1] if path.name != "__init__.py" else module.split(".")
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
            target = ".".join([*base, node.module] if node.module else base)
            if target:
                found.append(target)
            else:  # `from . import x`: a module, or a name defined in the package itself
                for a in node.names:
                    sub = PKG.joinpath(*base, a.name)
                    if sub.with_suffix(".py").exists() or sub.is_dir():
                        found.append(".".join([*base, a.name]))
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append("!" + node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            found += ["!" + a.name.split(".")[0] for a in node.names]
    return found


def test_every_module_has_a_layer_and_imports_downwards() -> None:
    problems = []
    for module, path in _modules():
        own = _layer(module)
        for target in _imports(module, path):
            if target.startswith("!"):
                if own <= 1 and target[1:] in IO_MODULES:
                    problems.append(f"{module} (layer {own}) imports {target[1:]}")
                continue
            if _layer(target) > own:
                problems.append(f"{module} (layer {own}) imports {target} (layer {_layer(target)})")
    assert problems == []


def test_the_rule_can_fail() -> None:
    assert _layer("cli_ws") == 4 and _layer("reconstruct.tools") == 1
    assert "!asyncio" in _imports("x", PKG / "ws_relay.py")

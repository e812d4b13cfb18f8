"""The shape of the package: layers by subsystem, pure cores apart, no import cycles, small
modules.

A subsystem is a top-level package (or module) of ``acp_proxy``; its layer is stated here,
once, and every module in it has that layer. In each subsystem, the sans-I/O part is the
``core`` subpackage (``record/core/``, ``check/core/``...): values in, values out, at layer
1, pure whatever its subsystem's layer. A module imports only from its own layer or those
below; a pure module imports no I/O and nothing that is not pure; no module imports another
that imports it back, and no subsystem another, directly or around a loop; no module is over
400 lines nor any function over 80 (the scripted demo aside); and no two public classes share
a name. A new module takes its place from the folder it is put in: there is no table
of modules to forget.
"""

from __future__ import annotations

import ast
from pathlib import Path

from support.paths import PACKAGE

PKG = PACKAGE

# The layer of each subsystem. A new subsystem fails the test until it is placed here.
LAYERS = {
    # the vocabulary everything speaks, the garbage collector's one switch, the numbers
    # the environment sets
    "collector": 0,
    "settings": 0,
    "errors": 0,
    "events": 0,
    "sgr": 0,
    "protocol": 0,
    # pure folds over frames (and every subsystem's core/, at this layer)
    "reconstruct": 1,
    "filters": 1,
    # storage, endpoints, recording, telemetry
    "store": 2,
    "transports": 2,
    "record": 2,
    "otel": 2,
    # what is built on them: safe text, checks, exports, relays, replay
    "text": 3,
    "check": 3,
    "export": 3,
    "relay": 3,
    "replay": 3,
    # reading captures back, for every reader
    "reading": 4,
    "api": 4,
    # the programs
    "demo": 5,
    "ui": 5,
    "cli": 5,
    "mcpserver": 5,
    "__main__": 6,
    "pytest_plugin": 6,
}
CORE = "core"  # the name of a subsystem's sans-I/O subpackage
CORE_LAYER = 1
# Subsystems without I/O all through (the others keep theirs out of core/).
PURE = frozenset({"collector", "errors", "events", "sgr", "protocol", "reconstruct", "filters"})
IO_MODULES = {
    "asyncio",
    "sqlite3",
    "subprocess",
    "socket",
    "click",
    "websockets",
    "threading",
}


def _in_core(module: str) -> bool:
    return CORE in module.split(".")[1:]


def _pure(module: str) -> bool:
    return module.split(".")[0] in PURE or _in_core(module)


def _layer(module: str) -> int:
    if _in_core(module):
        return CORE_LAYER
    subsystem = module.split(".")[0]
    if subsystem not in LAYERS:
        raise AssertionError(f"acp_proxy.{subsystem} has no layer in tests/test_layers.py")
    return LAYERS[subsystem]


def _modules() -> dict[str, Path]:
    out = {}
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        if parts:
            out[".".join(parts)] = path
    return out


def _imports(module: str, path: Path, known: dict[str, Path]) -> list[str]:
    """What ``module`` imports: package modules by dotted name (relative to the package),
    other top-level modules prefixed with ``!``."""
    tree = ast.parse(path.read_text())
    package = module.split(".")[:-1] if path.name != "__init__.py" else module.split(".")
    found: list[str] = []

    def add(target: str, names: list[str]) -> None:
        # `from acp_proxy.x import y` imports module x.y when y is a module
        subs = [f"{target}.{n}" if target else n for n in names]
        modules = [s for s in subs if s in known]
        found.extend(modules)
        if len(modules) < len(subs) and target:
            found.append(target)

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
            target = ".".join([*base, node.module] if node.module else base)
            add(target, [a.name for a in node.names])
        elif isinstance(node, ast.ImportFrom) and node.module:
            head, _, rest = node.module.partition(".")
            if head == "acp_proxy":
                add(rest, [a.name for a in node.names])
            else:
                found.append("!" + head)
        elif isinstance(node, ast.Import):
            for a in node.names:
                head, _, rest = a.name.partition(".")
                found.append(rest if head == "acp_proxy" else "!" + head)
    return [f for f in found if f != module]


def _graph() -> dict[str, list[str]]:
    known = _modules()
    return {m: _imports(m, p, known) for m, p in known.items()}


def test_every_module_has_a_layer_and_imports_downwards() -> None:
    problems = []
    for module, targets in _graph().items():
        own = _layer(module)
        pure = _pure(module)
        for target in targets:
            if target.startswith("!"):
                if pure and target[1:] in IO_MODULES:
                    problems.append(f"{module} (pure) imports {target[1:]}")
                continue
            if _layer(target) > own:
                problems.append(f"{module} (layer {own}) imports {target} (layer {_layer(target)})")
            if pure and not _pure(target):
                problems.append(f"{module} (pure) imports {target}, which is not pure")
    assert problems == []


def test_a_core_is_a_package() -> None:
    """``core`` names a subsystem's pure subpackage and nothing else (a ``core.py`` module
    would read as one and escape the rule)."""
    cores = [p.relative_to(PKG) for p in PKG.rglob("*.py") if p.stem == CORE]
    assert cores == []
    for core in PKG.glob(f"*/{CORE}"):
        assert (core / "__init__.py").is_file(), core


def _cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, []):
            if w.startswith("!") or w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles() -> None:
    assert _cycles(_graph()) == []


def _subsystems(graph: dict[str, list[str]]) -> dict[str, list[str]]:
    """The import graph between subsystems (the package's top-level packages and modules)."""
    out: dict[str, set[str]] = {}
    for module, targets in graph.items():
        top = module.split(".")[0]
        out.setdefault(top, set()).update(
            t.split(".")[0] for t in targets if not t.startswith("!") and t.split(".")[0] != top
        )
    return {k: sorted(v) for k, v in out.items()}


def test_no_cycles_between_subsystems() -> None:
    """No two subsystems import each other, directly or around a loop: recording does not
    import telemetry, endpoints do not import recording, text does not import what it
    renders above it."""
    assert _cycles(_subsystems(_graph())) == []


def test_the_rules_can_fail() -> None:
    assert _layer("cli.ws") == 5 and _layer("reconstruct.tools") == 1
    assert _layer("replay.serve") == 3 and _layer("replay.core.match") == 1
    assert _pure("record.core.wire") and _pure("protocol.frames") and not _pure("record.tap")
    assert not _pure("check.source") and _pure("check.core.schemas.overlay")
    assert _cycles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}) == [["a", "b", "c"]]
    graph = _graph()
    assert _cycles(_subsystems({"a.x": ["b.y"], "b.y": ["b.z"], "b.z": ["a.w"]})) == [["a", "b"]]
    assert "!asyncio" in graph["relay.pump"]
    assert "protocol.frames" in graph["reconstruct.fold"]


def test_the_layer_of_a_module_is_stated_here_only() -> None:
    # a module's docstring that says "(layer 2)" drifts from this file; the folders rule
    import re

    stated = [
        str(p.relative_to(PKG))
        for p in PKG.rglob("*.py")
        if re.search(r"\(layer \d", p.read_text(encoding="utf-8"))
    ]
    assert stated == []


def _class_names(sources: dict[str, str]) -> dict[str, list[str]]:
    """Public class names defined in more than one module, with those modules."""
    seen: dict[str, list[str]] = {}
    for rel, source in sources.items():
        for node in ast.parse(source).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                seen.setdefault(node.name, []).append(rel)
    return {name: rels for name, rels in seen.items() if len(rels) > 1}


def test_no_two_classes_share_a_name() -> None:
    """A name means one thing in the package: a reader who meets ``Message`` or ``Ending``
    need not ask which (module-private ``_Names`` may repeat). The Python API (``api/``)
    is the exception: it names its values as users know them (``acp_proxy.api.Frame``,
    ``Turn``), copies of the folds' own, and is read through its package name."""
    sources = {
        str(p.relative_to(PKG)): p.read_text(encoding="utf-8")
        for p in sorted(PKG.rglob("*.py"))
        if p.relative_to(PKG).parts[0] != "api"
    }
    assert _class_names(sources) == {}
    assert _class_names({"a.py": "class M: ...", "b.py": "class M: ...\nclass _P: ..."}) == {
        "M": ["a.py", "b.py"]
    }


# -- size ---------------------------------------------------------------------------------

MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 80
UNBOUNDED = ("demo",)  # the scripted demo is a script: its turns read top to bottom


def _oversize(rel: str, source: str) -> list[str]:
    """What in one module is over the limits: the module, and each function (methods and
    nested functions too, from ``def`` to its last line)."""
    out = []
    lines = len(source.splitlines())
    if lines > MAX_MODULE_LINES:
        out.append(f"{rel}: {lines} lines")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            n = (node.end_lineno or node.lineno) - node.lineno + 1
            if n > MAX_FUNCTION_LINES:
                out.append(f"{rel}:{node.lineno} {node.name}: {n} lines")
    return out


def test_no_module_over_400_lines_and_no_function_over_80() -> None:
    found: dict[str, list[str]] = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if rel.split("/")[0] in UNBOUNDED:
            continue
        problems = _oversize(rel, path.read_text(encoding="utf-8"))
        if problems:
            found[rel] = problems
    assert sorted(p for ps in found.values() for p in ps) == []


def test_the_size_rules_can_fail() -> None:
    body = "".join(f"    x = {i}\n" for i in range(80))
    assert _oversize("m.py", f"def f():\n{body}") == ["m.py:1 f: 81 lines"]
    assert _oversize("m.py", f"def f():\n{body[: -len('    x = 79') - 1]}") == []
    assert _oversize("m.py", "x = 1\n" * 401) == ["m.py: 401 lines"]
    assert _oversize("m.py", "x = 1\n" * 400) == []
    nested = f"class C:\n    async def g(self):\n{body.replace('    ', '        ')}"
    assert _oversize("m.py", nested) == ["m.py:2 g: 81 lines"]


def _prints_to_stdout(tree: ast.AST) -> list[tuple[int, str]]:
    """``print`` calls with no ``file=`` (so to standard output), with the function holding
    each (``""`` at module level)."""
    found: list[tuple[int, str]] = []

    def walk(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = (
                child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else where
            )
            if (
                isinstance(child, ast.Call)
                and isinstance(child.func, ast.Name)
                and child.func.id == "print"
                and not any(k.arg == "file" for k in child.keywords)
            ):
                found.append((child.lineno, where))
            walk(child, inner)

    walk(tree, "")
    return found


def test_nothing_prints_to_stdout_but_commands() -> None:
    # a relay's stdout is the editor's protocol stream: only the command line (and the
    # demo's own client, and the main() of a maintainer's `python -m` tool) print to it
    wrong = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if rel.startswith(("cli/", "demo/")):
            continue
        for line, where in _prints_to_stdout(ast.parse(path.read_text("utf-8"))):
            if where != "main":
                wrong.append(f"{rel}:{line}")
    assert wrong == []
    assert _prints_to_stdout(ast.parse("def f():\n    print(1)\nprint(2, file=x)")) == [(2, "f")]

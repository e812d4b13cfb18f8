"""One error tree, one way out (acp_proxy/errors.py, acp_proxy/cli/exits.py).

Every class of the tree is raised somewhere (a class nobody raises is a promise the code
does not keep), and nothing but the command line's one place leaves the process: a
command returns its status or raises, and ``cli/exits.py`` turns that into one line and an
exit status."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner
from support.paths import PACKAGE

from acp_proxy import errors
from acp_proxy.cli import main

EXITS = PACKAGE / "cli" / "exits.py"


def _sources() -> dict[Path, str]:
    return {f: f.read_text(encoding="utf-8") for f in PACKAGE.rglob("*.py")}


def test_every_error_class_is_raised_somewhere() -> None:
    sources = "\n".join(s for f, s in _sources().items() if f.name != "errors.py")
    classes = [getattr(errors, name) for name in errors.__all__]
    unraised = [
        cls.__name__
        for cls in classes
        if cls is not errors.ProxyError
        and not re.search(rf"(raise|return) {cls.__name__}\(", sources)
    ]
    assert unraised == []


def test_the_families_and_their_status() -> None:
    assert errors.UsageError.exit_code == 2 and errors.PeerError.exit_code == 4
    assert errors.LocalError.exit_code == 1 and errors.StoreError.exit_code == 3
    assert issubclass(errors.AgentSpawnError, errors.UsageError)
    assert issubclass(errors.UpstreamError, errors.PeerError)
    assert issubclass(errors.SchemaError, errors.StoreError)
    assert issubclass(errors.StoreError, errors.LocalError)


_EXITING = re.compile(r"os\._exit\(|sys\.exit\(|click\.UsageError|click\.exceptions\.Exit|\.exit\(")


def test_nothing_but_the_one_place_exits() -> None:
    """No module calls ``sys.exit``, ``os._exit`` or raises click's errors but
    ``cli/exits.py``; a program's ``main`` is run as ``raise SystemExit(main())`` only
    (the recorder, the guard, the live checker, the demo's peers)."""
    found = []
    for f, source in _sources().items():
        if f == EXITS:
            continue
        for n, line in enumerate(source.splitlines(), 1):
            if _EXITING.search(line) or (
                "SystemExit" in line
                and "raise SystemExit(main())" not in line
                and f.parent.name != "demo"
            ):
                found.append(f"{f.relative_to(PACKAGE)}:{n}: {line.strip()}")
    assert found == []


def test_an_error_is_one_line_and_its_status(tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(main, ["show", "--db", str(tmp_path / "none.sqlite")])
    assert missing.exit_code == errors.StoreError.exit_code
    assert missing.output.count("\n") == 1 and missing.output.startswith("acp-proxy: error: ")
    bad = runner.invoke(main, ["replay", "client", "recordings/demo-v1.jsonl"])
    assert bad.exit_code == errors.UsageError.exit_code
    assert bad.output == (
        "acp-proxy: error: no agent command given (usage: acp-proxy replay client -- CMD ...)\n"
    )

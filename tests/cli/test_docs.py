"""The documentation says what the code does: README commands, CI script, CLI reference."""

from __future__ import annotations

import re
import sys

import click
from click.testing import CliRunner

if __name__ == "__main__":  # run as a script to regenerate docs/cli.md
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from support.paths import ROOT

from acp_proxy.cli import main

CLI_DOC = ROOT / "docs" / "cli.md"


def _commands(group: click.Group, prefix: str = "acp-proxy") -> list[tuple[str, click.Command]]:
    out: list[tuple[str, click.Command]] = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is None or cmd.hidden:
            continue
        out.append((f"{prefix} {name}", cmd))
        if isinstance(cmd, click.Group):
            out.extend(_commands(cmd, f"{prefix} {name}"))
    return out


def render_cli_reference() -> str:
    """docs/cli.md, from the commands' own --help."""
    runner = CliRunner()
    parts = [
        "# Command-line reference",
        "",
        "Generated from `--help`; regenerate with `python tests/cli/test_docs.py`.",
        "",
    ]
    for path, _cmd in [("acp-proxy", main), *_commands(main)]:
        args = path.split()[1:]
        result = runner.invoke(main, [*args, "--help"], terminal_width=100)
        assert result.exit_code == 0, result.output
        parts += [f"## `{path}`", "", "```", result.output.rstrip(), "```", ""]
    return "\n".join(parts)


def test_cli_reference_is_current() -> None:
    assert CLI_DOC.read_text() == render_cli_reference(), (
        "docs/cli.md is stale: run `python tests/cli/test_docs.py`"
    )


def test_usage_names_the_command() -> None:
    assert "Usage: acp-proxy record [OPTIONS]" in CLI_DOC.read_text()


def test_every_command_has_an_example() -> None:
    for path, cmd in _commands(main):
        if isinstance(cmd, click.Group):
            continue
        assert "Example" in (cmd.help or ""), f"{path} --help has no example"


def test_readme_first_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```sh\n(.*?)```", readme, re.S)
    assert block is not None
    lines = [ln.split("#")[0].strip() for ln in block.group(1).splitlines() if ln.strip()]
    assert "acp-proxy demo" in lines[0] and lines[0].startswith("pip install")
    assert "pytest" in lines[1] and lines[1].startswith("pip install")
    steps = [step.strip() for step in lines[1].split("&&")]
    ci = (ROOT / ".ci" / "run").read_text()
    assert steps[-1] in ci, f".ci/run must run the README's test command: {steps[-1]}"
    assert "pip install -q -e '.[test]'" in ci
    assert "npm ci --prefix tests/npm" in steps  # the TypeScript SDK peers
    assert "npm ci --prefix tests/npm" in ci


if __name__ == "__main__":
    CLI_DOC.write_text(render_cli_reference())
    print(f"wrote {CLI_DOC}", file=sys.stderr)


def _examples() -> list[tuple[str, str]]:
    """Every ``acp-proxy …`` command line given as an example in a ``--help``."""
    out = []
    runner = CliRunner()
    for path, _cmd in [("acp-proxy", main), *_commands(main)]:
        text = runner.invoke(main, [*path.split()[1:], "--help"], terminal_width=200).output
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("acp-proxy ") and not line.startswith("acp-proxy [OPTIONS]"):
                out.append((path, line))
    return out


def _parse(line: str) -> None:
    """Parse one example the way the command line would, down to its command (without
    running it): a usage error raises."""
    import shlex
    import warnings

    words = shlex.split(line.split(" | ")[0].split(" && ")[0].split(" > ")[0], comments=True)
    args = words[1:]
    ctx = main.make_context("acp-proxy", list(args))
    cmd: click.Command = main
    while isinstance(cmd, click.Group):
        with warnings.catch_warnings():  # where a group leaves its command's words
            warnings.simplefilter("ignore", DeprecationWarning)
            rest = [*ctx.protected_args, *ctx.args]
        if not rest:
            return
        name, sub, rest = cmd.resolve_command(ctx, rest)
        assert sub is not None and name is not None
        ctx = sub.make_context(name, rest, parent=ctx)
        cmd = sub


def test_every_example_in_every_help_parses() -> None:
    """An example a user copies must not end in 'Got unexpected extra argument'. Files an
    example names (a rules file, a recording) need not exist here."""
    examples = _examples()
    assert len(examples) > 30
    bad = []
    for path, line in examples:
        try:
            _parse(line)
        except click.BadParameter as e:
            if "does not exist" not in str(e):
                bad.append(f"{path}: {line}: {e.format_message()}")
        except click.ClickException as e:
            bad.append(f"{path}: {line}: {e.format_message()}")
    assert bad == []

"""``acp-proxy check``: is this agent (or editor) speaking ACP correctly?

Reads captures from the database or a ``jsonl`` export, runs the pure checker
(:mod:`acp_proxy.check.core.checker`) and prints the findings as text, JSON, JUnit XML or SARIF.
Exit 1 when an error-level finding remains after ``--side``/``--ignore``, else 0.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from acp_proxy import __version__
from acp_proxy.cli.common import CONTEXT, Progress, echo, open_store, paged
from acp_proxy.cli.options import db_option, output_options
from acp_proxy.errors import UsageError
from acp_proxy.text.safe import json_visible

if TYPE_CHECKING:
    from acp_proxy.check.core.report import Result

__all__ = ["check"]


def _ignored(patterns: tuple[str, ...]) -> set[str]:
    from acp_proxy.check.core.rules import RULES

    out: set[str] = set()
    for p in patterns:
        for word in p.split(","):
            word = word.strip()
            if not word:
                continue
            hits = {r for r in RULES if fnmatch.fnmatchcase(r, word)}
            if not hits:
                raise UsageError(f"--ignore {word}: no such rule (see acp-proxy check --rules)")
            out |= hits
    return out


def _list_rules(as_json: bool) -> None:
    from acp_proxy.check.core.rules import RULES

    if as_json:
        import orjson

        rows = [
            {
                "id": r.id,
                "severity": r.severity,
                "side": r.side,
                "versions": list(r.versions),
                "title": r.title,
                "spec": r.spec,
            }
            for r in RULES.values()
        ]
        echo(json_visible(orjson.dumps(rows, option=orjson.OPT_INDENT_2).decode()))
        return
    for r in RULES.values():
        versions = "/".join(f"v{v}" for v in r.versions)
        echo(f"{r.id:<28} {r.severity:<8} {r.side:<9} {versions:<6} {r.title}")
        echo(f"{'':<28} {r.spec}")


@click.command(context_settings=CONTEXT)
@db_option
@click.argument("captures", nargs=-1, metavar="[CAPTURE|FILE.jsonl]...")
@click.option("--all", "every", is_flag=True, help="Check every capture in the database.")
@click.option(
    "--side",
    type=click.Choice(["agent", "client"]),
    help="Only findings where this side is at fault.",
)
@click.option(
    "--ignore",
    multiple=True,
    metavar="RULE",
    help="Drop a rule (repeatable, comma-separated, globs such as 'timing.*').",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "junit", "sarif"]),
    default="text",
    show_default=True,
    help="text for people, json for scripts, junit XML for CI test reports, sarif for "
    "code-scanning dashboards.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the report to a file (created mode 0600) instead of stdout.",
)
@click.option("--unstable", is_flag=True, help="Validate against the unstable ACP schemas.")
@click.option(
    "--protocol",
    type=click.Choice(["1", "2"]),
    help="Check as this protocol version (default: what initialize negotiated, else 1).",
)
@click.option(
    "--slow",
    type=click.FloatRange(min=0),
    default=60.0,
    show_default=True,
    metavar="SECONDS",
    help="timing.slow-response: a request answered later than this.",
)
@click.option(
    "--slow-cancel",
    type=click.FloatRange(min=0),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="timing.slow-cancel: a cancel honoured later than this.",
)
@click.option("--rules", "list_rules", is_flag=True, help="List every rule and exit.")
@click.option("--json", "as_json", is_flag=True, help="With --rules: the rules as JSON.")
@output_options
def check(
    db: Path | None,
    captures: tuple[str, ...],
    every: bool,
    side: str | None,
    ignore: tuple[str, ...],
    fmt: str,
    output: Path | None,
    unstable: bool,
    protocol: str | None,
    slow: float,
    slow_cancel: float,
    list_rules: bool,
    as_json: bool,
    no_pager: bool,
) -> int:
    """Check recorded traffic against ACP: framing, JSON-RPC, the JSON Schema of the
    negotiated version, and the protocol's behaviour rules, for both sides.

    CAPTURE is a capture id or uid prefix (default: the latest); a FILE.jsonl is a
    `jsonl` export. Exit status: 0 when no error-level finding remains, 1 when one does,
    2 for bad usage, 3 when the database cannot be read.

    \b
    Example:
        acp-proxy check                        # the latest capture
        acp-proxy check --all --side agent     # what the agents got wrong
        acp-proxy check session.jsonl --format junit -o check.xml
        acp-proxy check --rules
    """
    if list_rules:
        _list_rules(as_json)
        return 0
    if as_json:
        raise UsageError("--json goes with --rules; use --format json for findings")
    from acp_proxy.check.core.checker import Thresholds
    from acp_proxy.check.core.report import TEXT_LIMIT

    options = {
        "version": int(protocol) if protocol else None,
        "unstable": unstable,
        "ignore": _ignored(ignore),
        "thresholds": Thresholds(slow_response=slow, slow_cancel=slow_cancel),
        # the text report shows the first findings of each rule and counts the rest: a
        # capture wrong in every frame is not held in memory; the other formats list all
        "keep_per_rule": TEXT_LIMIT if fmt == "text" else None,
    }
    if every and captures:
        raise UsageError("--all checks every capture; give no CAPTURE with it")
    results = _check(db, captures, every, side, options)
    with paged(not no_pager and fmt == "text" and output is None):
        _report(results, fmt, output)
    return 1 if any(f.severity == "error" for r in results for f in r.findings) else 0


def _check(
    db: Path | None,
    captures: tuple[str, ...],
    every: bool,
    side: str | None,
    options: dict[str, Any],
) -> list[Result]:
    """Each capture named (files as jsonl exports), checked; findings of ``side`` only."""
    from acp_proxy.check.core.checker import Checker
    from acp_proxy.check.core.report import Result
    from acp_proxy.check.source import Capture, from_jsonl, from_store

    files = [Path(c) for c in captures if Path(c).is_file()]
    refs = [c for c in captures if not Path(c).is_file()]

    def sources() -> Iterator[Capture]:
        for f in files:
            yield from from_jsonl(f)
        if refs or every or not files:
            yield from from_store(open_store(db), refs, every)

    results: list[Result] = []
    for cap in sources():
        with Progress(f"checking {cap.name}", cap.total) as progress:
            checker = Checker(**options, side=side).run(progress.wrap(cap.frames), cap.ending)
        counted = dict(checker.counts) if options["keep_per_rule"] is not None else None
        results.append(Result(cap.name, checker.version, checker.frames, checker.findings, counted))
    return results


def _report(results: list[Result], fmt: str, output: Path | None) -> None:
    from acp_proxy.check.core.report import render_json, render_junit, render_sarif, render_text

    if fmt == "text":
        text = render_text(results)
    elif fmt == "json":
        text = json_visible(render_json(results))
    elif fmt == "junit":
        text = render_junit(results)
    else:
        text = render_sarif(results, __version__)
    if output is not None:
        from acp_proxy.store.private import open_private

        with open_private(output) as out:
            out.write(text.encode("utf-8", "surrogatepass"))
        echo(f"wrote {fmt} to {output}", err=True)
    else:
        echo(text, nl=False)

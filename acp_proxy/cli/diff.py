"""``acp-proxy diff A B``: compare two sessions turn by turn (captures or jsonl exports).

The comparison is the one ``replay client`` uses (:mod:`acp_proxy.replay.core.compare`), with
its detail facets on; working directories of B are mapped to A's by order of appearance,
sessions too, except a child session, which is the child announced at the same place of its
parent (:func:`~acp_proxy.replay.core.mapper.session_pairs`); tool calls and terminals are
paired by order.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import click

from acp_proxy.cli.common import CONTEXT, dump_json, echo, paged
from acp_proxy.cli.options import db_option, json_option, output_options

__all__ = ["diff"]


def _cwds(messages: list[Any]) -> list[str]:
    cwds: list[str] = []
    for m in messages:
        v = m.value
        if not isinstance(v, dict):
            continue
        p = v.get("params")
        if m.method in ("session/new", "session/load") and isinstance(p, dict):
            cwd = p.get("cwd")
            if isinstance(cwd, str) and m.kind == "request":
                cwds.append(cwd)
    return cwds


@click.command(context_settings=CONTEXT)
@db_option
@json_option
@click.argument("a")
@click.argument("b")
@click.option(
    "--ignore",
    "ignore",
    multiple=True,
    metavar="PATH",
    help="Mask a field of every message before comparing (params.update.title, "
    "params.update.content.text, * for any key or index); repeatable.",
)
@click.option("--timing", is_flag=True, help="Also show latencies and time to first output.")
@output_options
def diff(
    db: Path | None,
    as_json: bool,
    a: str,
    b: str,
    ignore: tuple[str, ...],
    timing: bool,
    no_pager: bool,
) -> int:
    """Compare two sessions turn by turn: prompts, answers (word diff), tool calls, permission
    requests, terminals, files written, stop reasons, errors and initialize. A and B are
    capture ids or jsonl exports. Exit status 1 when they differ.

    \b
    Example:
        acp-proxy diff 3 4
        acp-proxy diff before.jsonl 4 --timing
        acp-proxy diff 3 4 --json --ignore params.update.content.text
    """
    from acp_proxy.cli.views import load_frames
    from acp_proxy.replay.core.compare import compare, parse_ignore, summarise_run
    from acp_proxy.replay.core.detail import timing_changes
    from acp_proxy.replay.core.mapper import Mapper, pair_sessions, run_sessions
    from acp_proxy.replay.core.match import parse_messages
    from acp_proxy.replay.core.report import diff_lines, timing_lines

    patterns = parse_ignore(ignore)
    # A is read, summarised and let go before B is read: one run parsed in memory at a time
    ma = parse_messages(load_frames(db, a))
    cwds_a, sessions_a = _cwds(ma), run_sessions([m.value for m in ma])
    ra = summarise_run(ma, ignore=patterns, detail=True)
    del ma
    mb = parse_messages(load_frames(db, b))
    mapper = Mapper(zip(cwds_a, _cwds(mb), strict=False))
    for x, y in pair_sessions(sessions_a, run_sessions([m.value for m in mb])):
        mapper.add_session(x, y)
    # B in A's terms before summarising, so every lookup by session sees A's ids
    if not mapper.changes_nothing():
        for i, m in enumerate(mb):  # in place: the unmapped message goes as its copy comes
            mb[i] = dataclasses.replace(m, value=mapper.to_recorded(m.value))
    rb = summarise_run(mb, ignore=patterns, detail=True)
    del mb
    found = compare(ra, rb)
    times = timing_changes(ra, rb) if timing else []
    if as_json:
        out: dict[str, Any] = {
            "a": a,
            "b": b,
            "same": not found,
            "differences": [d.to_json() for d in found],
            "summary": {"a": ra.to_json(), "b": rb.to_json()},
        }
        if timing:
            out["timing"] = times
        dump_json(out)
    else:
        turns = max(len(ra.turns), len(rb.turns))
        with paged(not no_pager):
            echo(f"compared {turns} turn(s) of {a} (A) and {b} (B)")
            for side, run in (("A", ra), ("B", rb)):
                for note in run.retry_notes():
                    echo(f"  note · {side} {note}")
            for line in diff_lines(found, a, b):
                echo(line)
            for line in timing_lines(times):
                echo(line)
    return 1 if found else 0

"""``acp-proxy ui`` (the web inspector) and ``acp-proxy search`` (its index, from a shell)."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any

import click

from acp_proxy.cli.common import (
    CONTEXT,
    Int,
    Progress,
    db_path,
    dump_json,
    echo,
    open_store,
    paged,
)
from acp_proxy.cli.listening import allow_host_option, timeout_options, timeouts_of
from acp_proxy.cli.options import db_option, json_option, output_options
from acp_proxy.errors import UsageError
from acp_proxy.relay.core.admission import listen_address

__all__ = ["search", "ui"]


@click.command(context_settings=CONTEXT)
@db_option
@click.option(
    "--listen",
    default="127.0.0.1:8700",
    show_default=True,
    metavar="HOST:PORT",
    help="Where to serve (port 0: any free port). Another address than loopback needs --token.",
)
@click.option(
    "--token",
    default=None,
    metavar="SECRET",
    help="Required by the API (Authorization: Bearer SECRET or ?token=SECRET; the printed "
    "URL carries it).",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the page in a browser.")
@click.option(
    "--no-index",
    is_flag=True,
    help="Do not bring the search index up to date (the database is then only read).",
)
@allow_host_option
@timeout_options
def ui(
    db: Path | None,
    listen: str,
    token: str | None,
    open_browser: bool,
    no_index: bool,
    allow_hosts: tuple[str, ...],
    head_timeout: float,
    body_timeout: float,
    idle_timeout: float,
) -> None:
    """Serve a live web inspector over the recordings database and print its URL.

    Captures, each capture's timeline with filters and every frame's exact bytes, what the
    user saw (turns, tool calls, permissions, terminals, diffs, files), search across all
    captures, exports. A capture being recorded by another process updates within a second.

    \b
    Example:
        acp-proxy ui --open
        acp-proxy ui --listen 0.0.0.0:8700 --token "$(openssl rand -hex 16)"
    """
    from acp_proxy.ui.server import make_server, serve_until_interrupted
    from acp_proxy.ui.state import UiConfig

    host, port = listen_address(listen)
    config = UiConfig(
        db_path(db),
        host,
        port,
        token,
        index=not no_index,
        timeouts=timeouts_of(head_timeout, body_timeout, idle_timeout),
        allow_hosts=frozenset(allow_hosts),
    )
    server = make_server(config)

    def ready(url: str) -> None:
        echo(f"acp-proxy ui: serving {db_path(db)} at {url}")
        sys.stdout.flush()
        if open_browser:
            import webbrowser

            webbrowser.open(url)

    serve_until_interrupted(server, ready)


@click.command(context_settings=CONTEXT)
@db_option
@click.argument("query")
@click.option("--capture", metavar="CAPTURE", help="Only this capture (id or uid prefix).")
@click.option("--limit", type=Int(), default=50, show_default=True, help="At most this many hits.")
@json_option
@output_options
def search(
    db: Path | None, query: str, capture: str | None, limit: int, as_json: bool, no_pager: bool
) -> None:
    """Full-text search over the frames of every capture, newest first.

    Searches frames, the agent's stderr and the capture events (where the cause of a
    failure usually is). Every word must be there; words written together (session/prompt)
    or in quotes are a phrase; word* is a prefix. What was recorded since the last search
    is indexed first.

    \b
    Example:
        acp-proxy search 'permission denied'
        acp-proxy search 'tool_call' --capture 3 --json | jq '.[].seq'
    """
    from acp_proxy.store.index import catch_up, pending
    from acp_proxy.store.search import search as run_search

    if limit < 1:
        raise UsageError("--limit takes a number of one or more")
    store = open_store(db)
    try:
        todo = pending(store.conn)
    except sqlite3.OperationalError:
        todo = 0
    try:
        with Progress("indexing for search", todo) as progress:
            catch_up(store.conn, progress=lambda done: progress.advance(done - progress.done))
    except sqlite3.OperationalError as e:
        echo(f"acp-proxy: warning: search index not brought up to date: {e}", err=True)
    cid = store.capture(capture)["id"] if capture else None
    hits = run_search(store.conn, query, capture_id=cid, limit=limit)
    if as_json:
        dump_json([h.as_json() for h in hits])
        return
    with paged(not no_pager):
        _print_hits(hits)
    if not hits:
        echo(f"nothing matches {query!r} (frames, the agent's stderr, events)", err=True)
    elif hits.next is not None:
        echo(f"(more than {len(hits)}: --limit N shows more)", err=True)


def _print_hits(hits: list[Any]) -> None:
    for h in hits:
        if h.source == "frame":
            where = f"capture {h.capture_id} #{h.seq}"
            label = f"{'→' if h.direction == 'c2a' else '←'} {h.method or h.kind}"
        else:
            where = f"capture {h.capture_id} {h.t_ns / 1e6:.1f}ms"
            label = f"· {'stderr' if h.source == 'stderr' else 'event ' + h.kind}"
        echo(f"{where:<22} {label:<30} …{h.before}[{h.match}]{h.after}…")

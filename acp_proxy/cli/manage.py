"""``rm`` and ``prune``: delete captures (thin; the deleting is
:mod:`acp_proxy.store.prune`).

Safe while recorders write to the same database: short transactions, a busy database
waited for, and a capture still being recorded left alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from acp_proxy.cli.common import CONTEXT, db_path, echo
from acp_proxy.cli.options import db_option

__all__ = ["prune", "rm"]


def _writable(db: Path | None) -> tuple[Any, Any]:
    from acp_proxy.store.db import connect, migrate
    from acp_proxy.store.reader import Store

    store = Store(db_path(db))
    conn = connect(store.path, create=False)
    migrate(conn)
    return store, conn


def _delete(store: Any, conn: Any, found: list[dict[str, Any]], dry_run: bool) -> int:
    from acp_proxy.cli.common import Progress
    from acp_proxy.store.liveness import capture_state
    from acp_proxy.store.prune import delete_capture

    frames = 0
    for c in found:
        state = capture_state(c)
        if state in ("recording", "finishing"):
            echo(f"acp-proxy: capture {c['id']} is still being recorded; left alone", err=True)
            continue
        if dry_run:
            echo(f"would delete capture {c['id']} ({c.get('message_count', 0)} frames)")
            continue
        with Progress(f"deleting capture {c['id']}", c.get("message_count") or 0) as bar:
            n = delete_capture(conn, c["id"], bar.advance)
        frames += n
        echo(f"deleted capture {c['id']} ({n} frames)")
    return frames


@click.command(context_settings=CONTEXT)
@db_option
@click.argument("captures", nargs=-1, required=True)
@click.option("-n", "--dry-run", is_flag=True, help="Say what would be deleted; delete nothing.")
def rm(db: Path | None, captures: tuple[str, ...], dry_run: bool) -> None:
    """Delete captures: their frames, stderr, events and everything derived from them.

    A capture still being recorded is left alone. Safe while recorders write.

    \b
    Example:
        acp-proxy rm 3 4 a81f
    """
    store, conn = _writable(db)
    found: list[dict[str, Any]] = []
    for ref in captures:
        c = store.capture(ref)
        if all(c["id"] != f["id"] for f in found):
            found.append(c)
    _delete(store, conn, found, dry_run)


@click.command(context_settings=CONTEXT)
@db_option
@click.option(
    "--older-than",
    "older",
    required=True,
    metavar="AGE",
    help="Delete the captures started longer ago than AGE: 30d, 12h, 2w, 90m.",
)
@click.option("--vacuum", is_flag=True, help="Then give the freed space back (VACUUM).")
@click.option("-n", "--dry-run", is_flag=True, help="Say what would be deleted; delete nothing.")
def prune(db: Path | None, older: str, vacuum: bool, dry_run: bool) -> None:
    """Delete old captures, and with --vacuum shrink the database file.

    A capture still being recorded is left alone. Safe while recorders write.

    \b
    Example:
        acp-proxy prune --older-than 30d --vacuum
    """
    from acp_proxy.store.prune import older_than
    from acp_proxy.store.prune import vacuum as do_vacuum

    cutoff = older_than(older)
    store, conn = _writable(db)
    # the format captures are stored in (milliseconds, Z): compared as text, a cutoff cut
    # at the second would miss what started within that second
    stamp = cutoff.strftime("%Y-%m-%dT%H:%M:%S.") + f"{cutoff.microsecond // 1000:03d}Z"
    found = store.dicts("SELECT * FROM captures WHERE started_at < ? ORDER BY id", [stamp])
    if not found:
        echo(f"no captures started before {stamp.replace('T', ' ')} UTC", err=True)
    frames = _delete(store, conn, found, dry_run)
    if vacuum and not dry_run:
        do_vacuum(conn)
        echo(f"vacuumed {store.path}")
    if found and not dry_run:
        echo(f"{frames} frames deleted", err=True)

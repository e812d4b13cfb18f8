"""``acp-proxy import-spill``: bring spilled records into the database."""

from __future__ import annotations

from pathlib import Path

import click

from acp_proxy.cli.common import CONTEXT, db_path, echo
from acp_proxy.cli.options import db_option
from acp_proxy.errors import UsageError

__all__ = ["import_spill"]


@click.command("import-spill", context_settings=CONTEXT)
@db_option
@click.argument("files", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
def import_spill(db: Path | None, files: tuple[Path, ...]) -> None:
    """Bring spilled records (written while the database was unwritable) into it.

    \b
    Example:
        acp-proxy import-spill --db ~/acp.sqlite
    With no FILES, every spill file next to the database is imported.
    """
    import sqlite3

    from acp_proxy.errors import StoreError
    from acp_proxy.record.imports import import_spills
    from acp_proxy.record.ledger import ledger_files
    from acp_proxy.record.spill import journal_of, legacy_spill_files, spill_files
    from acp_proxy.record.sqlite import Database

    path = db_path(db, reading=False)
    todo = None
    if files:
        known = {f.name: journal_of(path, f) for f in spill_files(path)}
        todo = []
        for f in files:
            if f.name not in known:
                raise UsageError(f"{f} is not a spill file of {path}")
            todo.append(known[f.name])
    if todo is None and not spill_files(path) and not ledger_files(path):
        echo(f"no spill files next to {path}", err=True)
    else:
        try:
            database = Database(path)
        except sqlite3.Error as e:
            raise StoreError(f"cannot open {path}: {e}") from e
        try:
            results = import_spills(database, todo, warn=lambda m: echo(m, err=True))
        finally:
            database.close()
        for r in results:
            if r.skipped:
                echo(f"{r.path}: {r.skipped}; left as it is", err=True)
            else:
                echo(f"{r.path}: imported {r.frames} frames", err=True)
    for old in legacy_spill_files(path):
        echo(
            f"{old}: a spill file of an earlier acp-proxy (0.1); this version cannot import it",
            err=True,
        )

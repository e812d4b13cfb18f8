"""``acp-proxy import-spill``: bring spilled records into the database."""

from __future__ import annotations

from pathlib import Path

import click

from acp_proxy.cli.common import CONTEXT, db_option, db_path, handle_errors

__all__ = ["import_spill"]


@click.command("import-spill", context_settings=CONTEXT)
@db_option
@click.argument("files", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@handle_errors
def import_spill(db: Path | None, files: tuple[Path, ...]) -> None:
    """Bring spilled records (written while the database was unwritable) into it.

    \b
    Example:
        acp-proxy import-spill --db ~/acp.sqlite
    With no FILES, every spill file next to the database is imported.
    """
    from acp_proxy.record.writer import import_spill, spill_files
    from acp_proxy.store.db import connect, migrate

    path = db_path(db)
    conn = connect(path)
    migrate(conn)
    todo = list(files) or spill_files(path)
    if not todo:
        click.echo(f"no spill files next to {path}", err=True)
        return
    for f in todo:
        n = import_spill(conn, f)
        if n is None:
            click.echo(f"{f}: still being written by a running recorder; skipped", err=True)
        else:
            click.echo(f"{f}: imported {n} frames", err=True)

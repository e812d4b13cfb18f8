"""``acp-proxy import``: load jsonl exports (ours, redacted or not) as captures."""

from __future__ import annotations

from pathlib import Path

import click

from acp_proxy.cli.common import CONTEXT, db_path, dump_json, echo
from acp_proxy.cli.options import db_option, json_option

__all__ = ["import_exports"]


@click.command("import", context_settings=CONTEXT)
@db_option
@json_option
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
def import_exports(db: Path | None, as_json: bool, files: tuple[Path, ...]) -> None:
    """Load jsonl exports (acp-proxy export or share) into the database as captures, so
    every view, replay, check and diff works on them. Derived fields are computed again
    from the bytes, as when recording. A capture already in the database is not added
    twice.

    \b
    Example:
        acp-proxy import bug.jsonl && acp-proxy show --view turns
        acp-proxy import a.jsonl b.jsonl && acp-proxy diff 1 2
    """
    from acp_proxy.export.load import import_file, read_export

    for f in files:  # every file is checked before anything is written
        read_export(f)
    done = []
    for f in files:
        for result in import_file(db_path(db), f):
            done.append(result)
            if as_json:
                continue
            if result.already:
                echo(f"{result.source}: already in the database as capture {result.capture_id}")
            else:
                echo(
                    f"{result.source}: imported {result.frames} frames as capture "
                    f"{result.capture_id}"
                )
    if as_json:
        dump_json(
            [
                {
                    "file": r.source,
                    "uid": r.uid,
                    "capture": r.capture_id,
                    "frames": r.frames,
                    "already": r.already,
                }
                for r in done
            ]
        )

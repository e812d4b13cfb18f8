"""``acp-proxy captures``: the list of captures, as text or JSON.

What belongs here: the ``captures`` command and the layout of its table. What a row says
(status, peers, duration) is decided in :mod:`acp_proxy.text.captures`.
"""

from __future__ import annotations

from pathlib import Path

import click

from acp_proxy.cli.common import CONTEXT, Int, dump_json, echo, open_store, paged
from acp_proxy.cli.options import db_option, json_option, output_options
from acp_proxy.store.endings import ending_events
from acp_proxy.text.style import Styled

__all__ = ["captures"]


@click.command(context_settings=CONTEXT)
@db_option
@json_option
@click.option("-n", "--limit", type=Int(0), default=None, help="Only the latest N captures.")
@output_options
def captures(db: Path | None, as_json: bool, limit: int | None, no_pager: bool) -> None:
    """List captures: id, start, duration, agent, peers, protocol, messages, status, label.

    \b
    Example:
        acp-proxy captures -n 5
    """
    from acp_proxy.text.captures import capture_row

    store = open_store(db)
    listed = store.captures(limit)
    ends = ending_events(store, [c["id"] for c in listed] if limit is not None else None)
    rows = [capture_row(c, ends.get(c["id"], [])) for c in listed]
    if as_json:
        dump_json(rows)
        return
    if not rows:
        echo(f"no captures in {store.path}", err=True)
        return
    width = max(4, *(len(str(r["id"])) for r in rows))
    labels = max(5, *(len(_label(r["label"])) for r in rows))
    statuses = max(6, *(len(r["status"]) for r in rows))  # "ended by client: SIGTERM"…
    with paged(not no_pager):
        head = (
            f"{'id':>{width}}  {'started (UTC)':<19}  {'dur':>7}  {'proto':>5}  {'msgs':>6}  "
            f"{'status':<{statuses}}  {'label':<{labels}}  {'client ⇄ agent':<34}  command"
        )
        echo(Styled.of((head, "bold")))
        for r in rows:
            dur = "running" if r["duration_s"] is None else f"{r['duration_s']:.2f}s"
            peers = r["peers"]
            proto = f"v{r['protocol_version']}" if r["protocol_version"] is not None else "-"
            bad = r["status"] != "running" and not r["status"].startswith(("exit 0", "closed"))
            echo(
                Styled.of(
                    f"{r['id']:>{width}}  {r['started_at'][:19].replace('T', ' '):<19}  "
                    f"{dur:>7}  {proto:>5}  {r['messages']:>6}  ",
                    (f"{r['status']:<{statuses}}", "error" if bad else None),
                    f"  {_label(r['label']):<{labels}}  {peers:<34}  {r['agent_command']}",
                )
            )


def _label(label: str | None) -> str:
    if not label:
        return "-"
    return label if len(label) <= 24 else label[:23] + "…"

"""``acp-proxy chain``: every hop of a proxy chain, and their frames as one sequence.

What belongs here: the ``chain`` command — the listing of a chain's hops (found by
:mod:`acp_proxy.store.chains`) and the merged timeline (:mod:`acp_proxy.reconstruct.chain`),
each line saying which hop it is from. Frame lines are :mod:`acp_proxy.text.timeline`'s.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from acp_proxy.cli.common import (
    CONTEXT,
    CaptureCommand,
    dump_json,
    echo,
    open_store,
    paged,
)
from acp_proxy.cli.options import db_option, json_option, output_options
from acp_proxy.errors import UsageError
from acp_proxy.store.chains import ProxyChain
from acp_proxy.store.reader import Store, StoredFrame
from acp_proxy.text.style import Styled

__all__ = ["chain"]


@click.command(cls=CaptureCommand, context_settings=CONTEXT)
@db_option
@json_option
@click.argument("capture", required=False)
@click.option("--hops", "hops_only", is_flag=True, help="Only list the hops, not their frames.")
@output_options
def chain(
    db: Path | None, as_json: bool, capture: str | None, hops_only: bool, no_pager: bool
) -> None:
    """Show the proxy chain CAPTURE belongs to: every hop, then their frames as one timeline.

    A capture made by `acp-proxy record` under another `acp-proxy record` (a conductor
    that runs each proxy and the agent through acp-proxy) is a hop of the outer capture's
    chain. The outer capture comes first, then the hops in the order the conductor
    initialized them; each timeline line says which hop it is from.

    \b
    Example:
        acp-proxy chain 3
        acp-proxy chain 3 --hops --json
    """
    from acp_proxy.store.chains import chain_of

    store = open_store(db)
    c = store.capture(capture)
    found = chain_of(store, c)
    if found is None:
        raise UsageError(f"capture {c['id']} is not part of a proxy chain")
    if as_json:
        out: dict[str, Any] = {
            "chain": found.id,
            "hops": [h.to_json(i) for i, h in enumerate(found.hops)],
        }
        if not hops_only:
            out["frames"] = [_frame_json(at, hop, f, found) for at, hop, f in _frames(store, found)]
        dump_json(out)
        return
    with paged(not no_pager):
        for line in _hop_lines(found):
            echo(line)
        if not hops_only:
            _print_frames(store, found)


def _hop_lines(found: ProxyChain) -> list[str]:
    from acp_proxy.text.captures import capture_row

    lines = [f"proxy chain {found.id[:12]}: {len(found.hops)} capture(s)"]
    if not found.hops or found.hops[0].role != "outer":
        lines.append("  (its outer capture is not in this database)")
    for i, h in enumerate(found.hops):
        row = capture_row(h.capture)
        peers = f"{row.get('client') or '?'} ⇄ {row.get('agent') or '?'}"
        lines.append(f"  hop {i}  capture {h.capture['id']}  {h.role:<5}  {peers}  "
                     f"{row.get('agent_command') or ''}".rstrip())  # fmt: skip
    return lines


def _frames(store: Store, found: ProxyChain) -> Iterator[tuple[int, int, StoredFrame]]:
    from acp_proxy.reconstruct.chain import merged

    streams = [
        (h.capture["started_ns"], ((f.frame.t_ns, f) for f in store.frames(h.capture["id"])))
        for h in found.hops
    ]
    return merged(streams)


def _base(found: ProxyChain) -> int:
    return min((h.capture["started_ns"] for h in found.hops), default=0)


def _print_frames(store: Store, found: ProxyChain) -> None:
    from acp_proxy.text.timeline import frame_parts

    base = _base(found)
    echo("")
    for at, hop, f in _frames(store, found):
        parts = frame_parts(f, None, 5).parts
        echo(
            Styled.of(f"{(at - base) / 1e6:>10.3f}ms ", (f"hop {hop}", "bold"), f" #{f.seq:<5} ")
            + Styled(parts[1:])
        )


def _frame_json(at: int, hop: int, f: StoredFrame, found: ProxyChain) -> dict[str, Any]:
    return {
        "hop": hop,
        "capture": found.hops[hop].capture["id"],
        "seq": f.seq,
        "t_ms": round((at - _base(found)) / 1e6, 3),
        "direction": f.direction.value,
        "kind": f.kind,
        "method": f.method,
        "id": f.msg_id,
        "text": f.raw.decode("utf-8", "replace"),
    }

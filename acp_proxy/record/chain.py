"""Linking the hops of a proxy chain as they are recorded (docs/protocol.md §13.4).

What belongs here: the ``ACP_PROXY_CHAIN`` variable — what a ``record`` finds in its
environment (the chain it is a hop of, and the capture whose program started it), what it
hands the program it runs (the same chain, with itself as the parent; the chain of its
own when it found none) — and the ``chain`` event a hop records. A value we did not write
(malformed, or set by hand) is ignored: the capture is then the outer capture of a chain
of its own, never a hop of something we cannot find.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from acp_proxy import events
from acp_proxy.record.tap import Tap

__all__ = ["CHAIN_ENV", "Link", "found", "handed", "join"]

CHAIN_ENV = "ACP_PROXY_CHAIN"
"""``CHAIN:PARENT``: the chain's id (its outer capture's uid) and the uid of the capture
whose program runs us."""

_VALUE = re.compile(r"([0-9a-f]{32}):([0-9a-f]{32})")


@dataclass(frozen=True, slots=True)
class Link:
    """Where a capture sits in a chain: the chain's id and its parent capture's uid."""

    chain: str
    parent: str


def found(environ: Mapping[str, str]) -> Link | None:
    """The chain ``environ`` says we are a hop of, if it says so in our own format."""
    m = _VALUE.fullmatch(environ.get(CHAIN_ENV, ""))
    return Link(m.group(1), m.group(2)) if m else None


def handed(link: Link | None, uid: str) -> str:
    """The value the program a capture runs gets: its chain (or a chain of its own, whose id
    is its uid), with the capture as the parent."""
    return f"{link.chain if link is not None else uid}:{uid}"


def join(tap: Tap, environ: Mapping[str, str]) -> dict[str, str]:
    """Record whether ``tap``'s capture is a hop (the ``chain`` event), and return the
    environment for the program it runs."""
    link = found(environ)
    if link is not None:
        tap.event(events.Chain(chain=link.chain, parent=link.parent, role="hop"))
    return {**environ, CHAIN_ENV: handed(link, tap.meta.uid)}

"""The cyclic garbage collector, set for the work at hand: one place for every switch.

Folding a capture, relaying and recording make many short-lived objects and no reference
cycles, and the cyclic collector only costs there: repeated collections of a growing heap
take a fifth of a large fold's time (``bench/bench_reconstruct.py``) and a third of the
recorder's at small frames. So:

- a fold runs with the collector paused (:func:`paused`), and it is back as it was after;
  a fold kept for long (a large capture's, which the inspector keeps and reads a page at a
  time) is frozen as it ends: the next collections would otherwise walk its hundreds of
  thousands of objects, a few hundred ms each time, for nothing (it has no cycle, and it
  is freed by reference counts all the same). Freezing takes everything alive then, so a
  cycle another thread held at that moment is never collected: a few objects a fold, the
  price of not walking the fold again;
- a relaying process freezes what it loaded and collects its young objects far less often
  (:func:`for_relaying`), so the thread with bytes to forward is not held up by it;
- the recorder process freezes and turns it off (:func:`for_recording`): it collects by
  itself when it is idle, for the rare cycle (an exception's traceback, say).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["for_recording", "for_relaying", "paused"]


@contextlib.contextmanager
def paused(keep: bool = False) -> Iterator[None]:
    """No cyclic collection while inside (as it was, after); with ``keep``, what is made
    inside (and all before) is frozen when it ends, never walked by a collection again."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if keep:
            gc.freeze()
        if enabled:
            gc.enable()


def for_relaying() -> None:
    """A relaying process: what is loaded is frozen, the young generation collected seldom."""
    gc.freeze()
    gc.set_threshold(50_000, 50, 50)


def for_recording() -> None:
    """The recorder process: what is loaded is frozen, and no automatic collection."""
    gc.freeze()
    gc.disable()

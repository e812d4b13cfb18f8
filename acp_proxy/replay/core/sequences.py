"""Where two sequences differ, in bounded time (pure).

What belongs here: :func:`opcodes`, :class:`difflib.SequenceMatcher`'s answer for two
sequences of messages or words, bounded. The matcher costs up to the product of the two
lengths when items repeat, and the messages of a session repeat a great deal (a turn is
mostly ``agent_message_chunk`` after ``agent_message_chunk``): two runs of a million frames
took minutes and gigabytes to compare. Sequences small enough are matched as they always
were. Longer ones that differ at all mostly differ in a small part, so their common head and
tail are taken off first, at the cost of a comparison each; what is left in the middle is
matched only while it is small, and beyond that reported as one replaced stretch, which is
what a person reads of such a difference anyway.
"""

from __future__ import annotations

import difflib
from collections.abc import Hashable, Sequence

__all__ = ["MATCHED_AT_MOST", "opcodes"]

MATCHED_AT_MOST = 4_000_000
"""The largest product of the two middles' lengths that is matched item by item (about a
second of the matcher's time on repeated items)."""

Opcode = tuple[str, int, int, int, int]


def opcodes(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[Opcode]:
    """``difflib``'s opcodes (``equal``, ``replace``, ``delete``, ``insert`` with their
    index ranges) turning ``a`` into ``b``."""
    n, m = len(a), len(b)
    if n * m <= MATCHED_AT_MOST:  # small enough: the matcher's own answer, as it always was
        return list(difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes())
    head = 0
    while head < n and head < m and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < n - head and tail < m - head and a[n - 1 - tail] == b[m - 1 - tail]:
        tail += 1
    out: list[Opcode] = []
    if head:
        out.append(("equal", 0, head, 0, head))
    mid_a, mid_b = a[head : n - tail], b[head : m - tail]
    if mid_a or mid_b:
        if len(mid_a) * len(mid_b) <= MATCHED_AT_MOST:
            matcher = difflib.SequenceMatcher(a=mid_a, b=mid_b, autojunk=False)
            for op, i1, i2, j1, j2 in matcher.get_opcodes():
                out.append((op, head + i1, head + i2, head + j1, head + j2))
        else:
            op = "replace" if mid_a and mid_b else "delete" if mid_a else "insert"
            out.append((op, head, n - tail, head, m - tail))
    if tail:
        out.append(("equal", n - tail, n, m - tail, m))
    return out

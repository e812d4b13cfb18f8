"""Times in the JSON views: milliseconds since the capture started (pure).

What belongs here: the one rounding every view uses for ``*Ms``/``t_ms`` values, so two
views never disagree on a time by a microsecond.
"""

from __future__ import annotations

__all__ = ["dur", "ms"]


_EXACT = 1 << 50  # t_ns / 1e6 is within a thousandth of a microsecond of the exact value


def ms(t_ns: int | None) -> float | None:
    """``round(t_ns / 1e6, 3)``, the time in milliseconds to the microsecond; a third of
    the cost where the microseconds are not within one of a tie (a terminal's JSON has one
    per chunk): then the nearest microsecond of ``t_ns / 1e6`` is that of ``t_ns``, and an
    integer division is correctly rounded, as :func:`round` is."""
    if t_ns is None:
        return None
    if 0 <= t_ns < _EXACT and not 499 <= t_ns % 1000 <= 501:
        return ((t_ns + 500) // 1000) / 1000
    return round(t_ns / 1e6, 3)


def dur(a: int | None, b: int | None) -> float | None:
    return None if a is None or b is None else round((b - a) / 1e6, 3)

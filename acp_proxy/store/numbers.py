"""The integers the database can hold, and reading one that a user typed.

What belongs here: :data:`INT64_MAX` and :data:`INT64_MIN`, the bounds of an SQLite
integer (a larger Python integer bound to a query fails inside ``sqlite3`` with an
``OverflowError``, and one spelled into SQL text becomes a float), and :func:`parse_int`,
the one rule for a whole number given on the command line or in a URL of the web
inspector: ASCII digits with an optional sign, within the bounds asked for, else a
:class:`~acp_proxy.errors.UsageError` that names the option and says what it takes.
"""

from __future__ import annotations

import re

from acp_proxy.errors import UsageError

__all__ = ["INT64_MAX", "INT64_MIN", "fits", "parse_int"]

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

_WHOLE = re.compile(r"[+-]?[0-9]+")
_SHOWN = 40  # characters of a rejected value repeated in the message


def fits(n: int) -> bool:
    """Whether ``n`` can be stored in, or compared by, SQLite as an integer."""
    return INT64_MIN <= n <= INT64_MAX


def _shown(text: str) -> str:
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "…")


def parse_int(text: str, name: str, *, minimum: int = INT64_MIN, maximum: int = INT64_MAX) -> int:
    """``text`` as an integer from ``minimum`` to ``maximum`` (which SQLite's bounds
    clamp); :class:`UsageError` naming ``name`` otherwise. Unicode digits (``²``, ``٣``)
    and ``_`` separators, which :func:`int` would take or choke on, are refused."""
    low, high = max(minimum, INT64_MIN), min(maximum, INT64_MAX)
    word = text.strip()
    if not _WHOLE.fullmatch(word):
        raise UsageError(f"{name} takes a whole number, not {_shown(text)}")
    if len(word.lstrip("+-").lstrip("0")) > 19:  # beyond 2^63 whatever the digits: refused
        n = INT64_MIN - 1 if word.startswith("-") else INT64_MAX + 1  # before int() reads them
    else:
        n = int(word)
    if n > high:
        raise UsageError(f"{name} takes a number of at most {high}, not {_shown(word)}")
    if n < low:
        raise UsageError(f"{name} takes a number of {low} or more, not {_shown(word)}")
    return n

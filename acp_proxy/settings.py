"""The numbers read from the environment: one way to read them, and to refuse a bad one.

What belongs here: :func:`number`, which every ``ACP_PROXY_*`` variable holding a number
(seconds, a count, milliseconds) is read through. A value that is no number in its range
is never a crash: a relay that read it before forwarding a byte would cut the editor off
its agent. It is said once on stderr, one line naming the variable, and the default is
taken; a process of ours started after it (the recorder) is told so (:func:`said_env`) and
does not say it again. Which variables there are, and what each does, is in the modules
that read them (``docs/recording.md``, ``docs/storage.md``, ``docs/ui.md``).
"""

from __future__ import annotations

import math
import os
import sys

__all__ = ["DAY_S", "SAID_ENV", "number", "said_env"]

DAY_S = 24 * 3600.0
SAID_ENV = "ACP_PROXY_SAID"
"""The variables already said to be bad, comma-separated, for a process we start."""
_said: set[str] = {n for n in os.environ.get(SAID_ENV, "").split(",") if n}


def said_env() -> dict[str, str]:
    """The environment that tells a process we start which bad values were said already."""
    return {SAID_ENV: ",".join(sorted(_said))} if _said else {}


def _shown(x: float) -> str:
    return str(int(x)) if x == int(x) and abs(x) < 1e15 else f"{x:g}"


def number(
    name: str,
    default: float,
    *,
    least: float = 0,
    most: float = DAY_S,
    integer: bool = False,
) -> float:
    """``name``'s value from ``least`` to ``most`` (a whole number when ``integer``), or
    ``default`` when it is unset or empty; a value that is neither is said on stderr and
    ``default`` taken."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(int(text)) if integer else float(text)
    except ValueError:
        value = math.nan
    if least <= value <= most:  # NaN is in no range
        return value
    if name not in _said:
        _said.add(name)
        kind = "a whole number" if integer else "a number"
        sys.stderr.write(
            f"acp-proxy: warning: {name}={text!r} is not {kind} from {_shown(least)} to "
            f"{_shown(most)}; taking {_shown(default)}\n"
        )
        sys.stderr.flush()
    return default

"""What every event kind shares: the base class and the defensive readers of a detail."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

__all__ = [
    "D",
    "Event",
    "by",
    "generic",
    "join",
    "mapping",
    "number",
    "paren",
    "signame",
    "size_of",
    "status",
    "text",
]

D = Mapping[str, Any]


def text(d: D, key: str) -> str | None:
    v = d.get(key)
    return v if isinstance(v, str) and v else None


def number(d: D, key: str) -> int | float | None:
    v = d.get(key)
    return v if isinstance(v, int | float) and not isinstance(v, bool) else None


def mapping(d: D, key: str) -> D:
    v = d.get(key)
    return v if isinstance(v, Mapping) else {}


def size_of(n: int | float | None) -> str | None:
    if n is None:
        return None
    if n < 10_000:
        return f"{int(n)} B"
    if n < 10_000_000:
        return f"{n / 1000:.1f} kB"
    return f"{n / 1e6:.1f} MB"


def join(*parts: str | None, sep: str = ", ") -> str:
    return sep.join(p for p in parts if p)


def paren(*parts: str | None) -> str:
    inner = join(*parts)
    return f" ({inner})" if inner else ""


class Event:
    """Base of the kinds: each says what it means (its docstring) and how it reads."""

    kind: ClassVar[str] = ""
    bad: ClassVar[bool] = False

    @classmethod
    def line(cls, d: D) -> str:
        return generic(cls.kind, d)


def generic(kind: str, d: D) -> str:
    """A kind we do not know (a newer release's, a file's): its name and simple fields."""
    extra = ", ".join(
        f"{k}={v}" for k, v in d.items() if isinstance(v, str | int | float) and len(str(v)) < 80
    )
    return kind + (f" ({extra})" if extra else "")


def status(d: D) -> str:
    status = number(d, "status")
    return f"HTTP {int(status)}" if status is not None else "HTTP ?"


def by(d: D) -> str:
    by = text(d, "by")
    return f", by the {by}" if by in ("proxy", "peer") else ""


_SIGNALS = {1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 6: "SIGABRT", 9: "SIGKILL", 11: "SIGSEGV",
            13: "SIGPIPE", 15: "SIGTERM"}  # fmt: skip


def signame(n: int) -> str:
    name = _SIGNALS.get(n)
    return f" ({name})" if name else ""

"""What every event kind shares: the base class, and the defensive readers of a detail.

An event is written as a value of its kind's class (``tap.event(Spawn(pid=…, argv=…))``);
:meth:`Event.detail` is the JSON object stored for it: its fields in the order the class
declares them, those left :data:`UNSET` out. An event read back is a mapping from the
database or from a file, never trusted to have the fields its class declares: the
readable line (:meth:`Event.line`) reads it with :func:`text`, :func:`number` and
:func:`mapping`, which leave out what is missing or ill-typed.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any, ClassVar, Final

__all__ = [
    "UNSET",
    "D",
    "Event",
    "Unset",
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


class Unset(enum.Enum):
    """The type of :data:`UNSET`: a field the event leaves out of its detail."""

    UNSET = "unset"


UNSET: Final = Unset.UNSET


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """Base of the kinds: each says what it means (its docstring), what it holds (its
    fields) and how it reads (:meth:`line`)."""

    kind: ClassVar[str] = ""
    bad: ClassVar[bool] = False

    def detail(self) -> dict[str, Any]:
        """The JSON object stored for this event: every field but those left unset, in
        the order declared (a trailing ``_`` dropped from a name: ``bytes_`` is stored
        as ``bytes``)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is not UNSET:
                out[f.name.rstrip("_")] = value
        return out

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

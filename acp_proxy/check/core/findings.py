"""What a conformance check produces (pure values).

What belongs here: the severities, :class:`Rule` (what one check is: its id, severity, the
side normally at fault, the versions it applies to, its title and spec page) and
:class:`Finding` (one rule broken by one frame, or by the capture as a whole). The table of
every rule is :data:`acp_proxy.check.core.rules.RULES`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["ERROR", "INFO", "SEVERITIES", "WARNING", "Finding", "Rule", "rule"]

ERROR = "error"
WARNING = "warning"
INFO = "info"
SEVERITIES = (ERROR, WARNING, INFO)


@dataclass(frozen=True, slots=True)
class Rule:
    """One check. ``side`` is who is normally at fault: ``sender`` (whoever sent the
    frame), ``receiver`` (whoever should have answered), ``agent``, ``client`` or ``-``."""

    id: str
    severity: str
    side: str
    versions: tuple[int, ...]
    title: str
    spec: str
    covers_schema: bool = False  # a finding of this rule replaces schema.invalid on its frame


@dataclass(frozen=True, slots=True)
class Finding:
    """One rule broken. ``seq`` is the frame at fault (None: the capture as a whole);
    ``related`` are other frames involved (the request of a response, the cancel...)."""

    rule: str
    severity: str
    side: str
    seq: int | None
    message: str
    excerpt: str = ""
    related: tuple[int, ...] = field(default=())
    spec: str = ""


_SPEC = "https://agentclientprotocol.com/protocol"


def rule(
    id: str,
    severity: str,
    side: str,
    title: str,
    page: str,
    versions: tuple[int, ...] = (1, 2),
    covers_schema: bool = False,
) -> Rule:
    """A :class:`Rule` of the table; ``page`` is a page of the specification of the first
    version it applies to (or a whole address)."""
    v = versions[0] if len(versions) == 1 else 1
    spec = page if page.startswith("https://") else f"{_SPEC}/v{v}/{page}"
    return Rule(id, severity, side, versions, title, spec, covers_schema)

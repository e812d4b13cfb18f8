"""Redaction applied to what an export writes: stored frames, capture metadata, stderr, events.

What belongs here: the glue between :mod:`acp_proxy.export.core.redact` (which decides and
replaces) and the export formats (which take :class:`~acp_proxy.store.reader.StoredFrame`
values and a capture's row): the redacted frames with their derived fields redacted the
same way, what each changed frame records (``sha256`` of its original bytes, the rules),
and the summary printed on stderr.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from acp_proxy.export.core.redact import Redactor
from acp_proxy.store.reader import StoredFrame

__all__ = [
    "Shared",
    "redact_capture",
    "redact_log",
    "redact_stored",
    "redact_value",
    "summary_lines",
]


@dataclasses.dataclass(slots=True)
class Shared:
    frames: list[StoredFrame]
    notes: dict[int, dict[str, Any]]  # seq -> {"sha256", "rules"} of each changed frame


def redact_stored(redactor: Redactor, stored: Sequence[StoredFrame]) -> Shared:
    """The frames as they go out; derived text fields get the same placeholders."""
    done = redactor.redact([sf.frame for sf in stored])
    frames: list[StoredFrame] = []
    notes: dict[int, dict[str, Any]] = {}
    for sf, r in zip(stored, done, strict=True):
        if r.sha256 is None:
            frames.append(sf)
            continue
        notes[sf.seq] = {"sha256": r.sha256, "rules": list(r.rules)}
        frames.append(
            dataclasses.replace(
                sf,
                frame=r.frame,
                size=len(r.frame.raw),
                method=_text(redactor, sf.method),
                msg_id=_text(redactor, sf.msg_id),
                session_id=_text(redactor, sf.session_id),
                update_kind=_text(redactor, sf.update_kind),
                tool_call_id=_text(redactor, sf.tool_call_id),
                terminal_id=_text(redactor, sf.terminal_id),
            )
        )
    return Shared(frames, notes)


def _text(redactor: Redactor, value: str | None) -> str | None:
    return None if value is None else redactor.text(value)


def redact_capture(redactor: Redactor, capture: dict[str, Any]) -> dict[str, Any]:
    """A capture's row with its text columns (command, cwd, URLs, peers…) redacted. Its
    ``uid`` becomes one derived from the original and the classes redacted, so a shared
    copy imported next to the original is a capture of its own (and importing it twice
    still adds it once)."""
    out = {k: redactor.text(v) if isinstance(v, str) else v for k, v in capture.items()}
    basis = f"redacted:{capture.get('uid')}:{','.join(sorted(redactor.classes))}"
    out["uid"] = hashlib.sha256(basis.encode()).hexdigest()[:32]
    return out


def redact_log(
    redactor: Redactor, stderr: Iterable[tuple[int, bytes]], events: Iterable[dict[str, Any]]
) -> tuple[list[tuple[int, bytes]], list[dict[str, Any]], int]:
    """The agent's stderr and the capture's events as they go out, with the same
    placeholders as the frames (the cause of a failure stays in a bug report, its secrets
    do not); and how many of them changed. Bytes that are not UTF-8 are kept as they were
    around what is replaced."""
    changed = 0
    out_err: list[tuple[int, bytes]] = []
    for t_ns, data in stderr:
        text = data.decode("utf-8", "surrogateescape")
        done = redactor.text(text)
        changed += done != text
        out_err.append((t_ns, done.encode("utf-8", "surrogateescape")))
    out_ev: list[dict[str, Any]] = []
    for ev in events:
        detail = ev.get("detail")
        if isinstance(detail, str) and detail:
            new = _redact_detail(redactor, detail)
            if new != detail:
                changed += 1
                ev = {**ev, "detail": new}
        out_ev.append(ev)
    return out_err, out_ev, changed


def _redact_detail(redactor: Redactor, detail: str) -> str:
    """An event's JSON detail with each string value redacted (the text as it was when
    nothing in it is secret)."""
    try:
        value = orjson.loads(detail)
    except orjson.JSONDecodeError:
        return redactor.text(detail)
    redacted = redact_value(redactor, value)
    return detail if redacted == value else orjson.dumps(redacted).decode()


def redact_value(redactor: Redactor, value: Any) -> Any:
    """``value`` (JSON-like) with each string in it redacted."""
    if isinstance(value, str):
        return redactor.text(value)
    if isinstance(value, dict):
        return {k: redact_value(redactor, v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_value(redactor, v) for v in value]
    return value


def summary_lines(
    redactor: Redactor, changed: int, total: int, log: tuple[int, int] | None = None
) -> list[str]:
    """What was redacted, by rule and count, for stderr (``log``: changed and total of the
    agent's stderr writes and events)."""
    lines = [f"redacted {changed} of {total} frame(s)"]
    if log is not None:
        lines[0] += f", {log[0]} of {log[1]} stderr write(s) and event(s)"
    for rule, count in sorted(redactor.counts.items(), key=lambda kv: (-kv[1], kv[0])):
        distinct = redactor.distinct.get(rule, 0)
        lines.append(f"  {rule}: {count} replacement(s), {distinct} distinct value(s)")
    lines.extend(f"  note: {n}" for n in redactor.notes)
    return lines

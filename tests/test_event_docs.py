"""The capture events are one typed vocabulary (acp_proxy/events), written as values and
documented from the classes themselves.

docs/storage.md lists every event kind with what it means and what it holds, made from the
vocabulary: a kind added without its doc, or a doc of a kind that is gone, fails. No module
writes an event by name, every kind is written somewhere, and the JSON each kind stores is
the JSON it always stored (old databases and exports read the same).

Run ``python tests/test_event_docs.py`` to write the table again."""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

import orjson

from acp_proxy import events
from acp_proxy.events import KINDS, UNSET

DOC = Path(__file__).parents[1] / "docs" / "storage.md"
PACKAGE = Path(__file__).parents[1] / "acp_proxy"
BEGIN, END = "<!-- events:begin -->", "<!-- events:end -->"


def _fields(cls: type[events.Event]) -> str:
    names = [
        f"`{f.name.rstrip('_')}{'?' if f.default is UNSET else ''}`"
        for f in dataclasses.fields(cls)
    ]
    return ", ".join(names) or "—"


def table() -> str:
    rows = ["| kind | what it means | fields | shown as |", "| --- | --- | --- | --- |"]
    for kind, cls in sorted(KINDS.items()):
        doc = " ".join((cls.__doc__ or "").split()).replace("``", "`")
        rows.append(
            f"| `{kind}` | {doc} | {_fields(cls)} | {'an error' if cls.bad else 'an event'} |"
        )
    return "\n".join(rows)


def current() -> str:
    text = DOC.read_text(encoding="utf-8")
    return re.sub(f"{BEGIN}.*?{END}", f"{BEGIN}\n{table()}\n{END}", text, flags=re.S)


def test_every_event_kind_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert BEGIN in text and END in text
    assert text == current(), "docs/storage.md: run python tests/test_event_docs.py"
    for kind, cls in KINDS.items():
        assert cls.__doc__, f"event kind {kind} has no docstring"


def _sources() -> dict[str, str]:
    return {
        str(f.relative_to(PACKAGE)): f.read_text(encoding="utf-8")
        for f in PACKAGE.rglob("*.py")
        if f.parent.name != "events"
    }


def test_no_event_is_written_by_name() -> None:
    """A kind is written as a value of its class, never as a string and keywords."""
    by_name = {
        path: found
        for path, source in _sources().items()
        if (found := re.findall(r"""\.event\(\s*["'f]""", source))
    }
    assert by_name == {}


def test_every_kind_is_written_somewhere() -> None:
    """Each kind is made somewhere, as ``events.Kind`` (a kind nobody writes is stale)."""
    sources = "\n".join(_sources().values())
    unwritten = [
        kind
        for kind, cls in KINDS.items()
        if not re.search(rf"\bevents\.{cls.__name__}\b", sources)
    ]
    assert unwritten == []


def _stored(event: events.Event) -> bytes:
    """What a tap writes for ``event`` (record/tap.py)."""
    return orjson.dumps({"kind": event.kind, "detail": event.detail()})


def test_the_stored_json_of_each_shape_is_unchanged() -> None:
    """Byte for byte what the writers stored when they passed keywords, so a capture
    recorded now reads like one recorded before."""
    exit_ = events.Exit(returncode=-15, exit_code=143, signal=15, runtime_ms=1.5)
    assert _stored(exit_) == (
        b'{"kind":"exit","detail":{"returncode":-15,"exit_code":143,"signal":15,"runtime_ms":1.5}}'
    )
    gap = events.Gap(stream="c2a", start=3, end=9, bytes_=6, frames=None, reason="full",
                     after_seq=2)  # fmt: skip
    assert _stored(gap) == (
        b'{"kind":"gap","detail":{"stream":"c2a","start":3,"end":9,"bytes":6,"frames":null,'
        b'"reason":"full","after_seq":2}}'
    )
    sse_end = events.StreamEnd(stream="session", session="s1", how="drop", by="peer",
                               events=2, bytes_=40, messages=[0, 1], error="cut",
                               incomplete={"raw": "da"})  # fmt: skip
    assert _stored(sse_end) == (
        b'{"kind":"stream_end","detail":{"stream":"session","session":"s1","how":"drop",'
        b'"by":"peer","events":2,"bytes":40,"messages":[0,1],"error":"cut",'
        b'"incomplete":{"raw":"da"}}}'
    )
    close = events.Close(side="client", how="close", by="peer", code=1000, reason="")
    assert _stored(close) == (
        b'{"kind":"close","detail":{"side":"client","how":"close","by":"peer","code":1000,'
        b'"reason":""}}'
    )
    ends = events.DirectionEnd(direction="c2a", delivered=3)
    assert _stored(ends) == b'{"kind":"direction_end","detail":{"direction":"c2a","delivered":3}}'
    assert _stored(events.ClientEof()) == b'{"kind":"client_eof","detail":{}}'
    signal = events.Signal(signal="SIGTERM")
    assert _stored(signal) == b'{"kind":"signal","detail":{"signal":"SIGTERM"}}'


if __name__ == "__main__":
    DOC.write_text(current(), encoding="utf-8")
    sys.exit(0)

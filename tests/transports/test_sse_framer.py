"""The event-stream framer: every byte is in exactly one event, whatever the chunking, and
the data of each event is what the event-stream format says it is."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from acp_proxy.transports.sse import SseEvent, SseFramer, canonical


def run(chunks: list[bytes], max_size: int = 1 << 20) -> list[SseEvent]:
    f = SseFramer(max_size)
    out = [e for c in chunks for e in f.feed(c)]
    tail = f.end()
    return [*out, tail] if tail is not None else out


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    edges = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges)]


def reference(data: bytes) -> list[bytes]:
    """The data of each dispatched event, by the format's rules, written plainly."""
    lines: list[bytes] = []
    i, line = 0, bytearray()
    while i < len(data):
        c = data[i : i + 1]
        if c == b"\r":
            lines.append(bytes(line))
            line.clear()
            if data[i + 1 : i + 2] == b"\n":
                i += 1
        elif c == b"\n":
            lines.append(bytes(line))
            line.clear()
        else:
            line += c
        i += 1
    out: list[bytes] = []
    buf: list[bytes] | None = None
    for ln in lines:
        if not ln:
            if buf is not None:
                out.append(b"\n".join(buf))
            buf = None
            continue
        name, colon, value = ln.partition(b":")
        if colon and name == b"data":
            buf = [*(buf or []), value[1:] if value.startswith(b" ") else value]
    return out


PIECES = st.lists(
    st.sampled_from(
        [
            b"data: ",
            b"data:",
            b"data",
            b"id: 3",
            b": ka",
            b"retry: 9",
            b"\n",
            b"\r\n",
            b"\r",
            b'{"a":1}',
            b"\xff\xfe",
            b"x",
            b"event: e",
        ]
    ),
    max_size=60,
).map(b"".join)


@given(PIECES, st.lists(st.integers(min_value=0), max_size=8))
@settings(max_examples=300, deadline=None)
def test_every_byte_once_and_data_as_specified(data: bytes, cuts: list[int]) -> None:
    whole = run([data])
    chunked = run(split(data, cuts))
    assert b"".join(e.raw for e in chunked) == data
    # a chunk ending in \r is held until the next byte says whether \n follows, so the
    # events are the same however the bytes were cut
    assert [(e.raw, e.data) for e in chunked] == [(e.raw, e.data) for e in whole]
    dispatched = [e.data for e in whole if e.complete and e.data is not None]
    assert [d for d in dispatched] == reference(data)


@given(PIECES, st.lists(st.integers(min_value=0), max_size=8), st.integers(1, 24))
@settings(max_examples=300, deadline=None)
def test_over_the_limit_every_byte_still_once(data: bytes, cuts: list[int], limit: int) -> None:
    events = run(split(data, cuts), max_size=limit)
    assert b"".join(e.raw for e in events) == data
    for e in events:
        if not e.oversize and e.complete:
            assert len(e.raw) <= limit + 2 or e.raw.count(b"\n") + e.raw.count(b"\r") >= 2


def test_canonical_and_not() -> None:
    events = run([b'data: {"a":1}\n\n', b"id: 1\ndata: x\n\n", b": keepalive\n\n"])
    assert [canonical(e) for e in events] == [True, False, False]
    assert [e.data for e in events] == [b'{"a":1}', b"x", None]


def test_an_oversize_event_ends_at_its_empty_line() -> None:
    big = b"data: " + b"y" * 100 + b"\n\n"
    events = run([big[:50], big[50:], b"data: after\n\n"], max_size=40)
    assert all(e.oversize for e in events[:-1])
    assert b"".join(e.raw for e in events[:-1]) == big
    assert (events[-1].raw, events[-1].data, events[-1].oversize) == (
        b"data: after\n\n",
        b"after",
        False,
    )

"""LineFramer: exact slices for any input and any chunking (property-based)."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from acp_proxy.protocol.framing import LineFramer, Piece

# bytes rich in the characters that matter to framing
_alphabet = st.sampled_from(
    [
        b"\n",
        b"\r",
        b"\r\n",
        b"{",
        b"}",
        b'"',
        b"\xef\xbb\xbf",
        b"\xe2\x9c\x94",
        b"\xff",
        b"a",
        b" ",
        b"\\",
    ]
)
streams = st.lists(_alphabet, max_size=200).map(b"".join) | st.binary(max_size=500)


def _cuts(data: bytes, points: list[int]) -> list[bytes]:
    marks = sorted({p % (len(data) + 1) for p in points})
    bounds = [0, *marks, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


def _join(pieces: list[Piece]) -> bytes:
    return b"".join(p.raw + (b"\n" if p.terminated else b"") for p in pieces)


def _frame_all(chunks: list[bytes], max_frame: int = 1 << 20) -> list[Piece]:
    f = LineFramer(max_frame)
    out: list[Piece] = []
    for c in chunks:
        out += f.feed(c)
    return out + f.end()


@settings(max_examples=400)
@given(streams, st.lists(st.integers(min_value=0, max_value=10_000), max_size=30))
def test_any_chunking_reproduces_the_stream(data: bytes, points: list[int]) -> None:
    pieces = _frame_all(_cuts(data, points))
    assert _join(pieces) == data
    assert pieces == _frame_all([data])  # the same frames however the bytes arrived
    for p in pieces:
        assert b"\n" not in p.raw


@settings(max_examples=200)
@given(
    streams,
    st.lists(st.integers(min_value=0, max_value=10_000), max_size=10),
    st.integers(min_value=1, max_value=16),
)
def test_oversize_lines_are_split_not_lost(data: bytes, points: list[int], limit: int) -> None:
    pieces = _frame_all(_cuts(data, points), max_frame=limit)
    assert _join(pieces) == data
    assert all(len(p.raw) <= limit for p in pieces)
    assert all(not p.terminated for p in pieces if p.split)


def test_every_split_point_of_a_session() -> None:
    data = (
        b'{"jsonrpc":"2.0","id":0,"method":"initialize"}\r\n\n'
        b'\xef\xbb\xbf{"x":"\xe2\x9c\x94"}\n[1,2]\nlast'
    )
    whole = _frame_all([data])
    assert [p.raw for p in whole] == [
        b'{"jsonrpc":"2.0","id":0,"method":"initialize"}\r',
        b"",
        b'\xef\xbb\xbf{"x":"\xe2\x9c\x94"}',
        b"[1,2]",
        b"last",
    ]
    assert [p.terminated for p in whole] == [True, True, True, True, False]
    for i in range(len(data) + 1):
        for j in range(i, len(data) + 1):
            assert _frame_all([data[:i], data[i:j], data[j:]]) == whole


def test_no_bytes_no_frames() -> None:
    f = LineFramer()
    assert f.feed(b"") == [] and f.end() == []
    assert f.feed(b"\n") == [Piece(b"", True)]


def test_a_long_line_is_not_held_back_beyond_the_limit() -> None:
    f = LineFramer(max_frame=4)
    assert f.feed(b"abcdefghij") == [Piece(b"abcd", False, True), Piece(b"efgh", False, True)]
    assert f.pending == 2
    assert f.feed(b"\n") == [Piece(b"ij", True)]

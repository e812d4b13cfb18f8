"""The record format between a relay and its recorder: exact, however the bytes are cut."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from acp_proxy.record.core.wire import HEADER, Record, RecordReader, Type, encode

records = st.builds(
    Record,
    st.sampled_from(list(Type)).map(int),
    st.integers(0, 3),
    st.integers(0, 0xFFFF),
    st.integers(0, 2**32 - 1),
    st.integers(0, 2**64 - 1),
    st.integers(0, 2**64 - 1),
    st.integers(0, 2**64 - 1),
    st.binary(max_size=300),
)


@given(st.lists(records, max_size=20), st.lists(st.integers(1, 97), max_size=40))
def test_records_come_out_whole_and_unchanged_for_any_cuts(
    recs: list[Record], cuts: list[int]
) -> None:
    stream = b"".join(encode(r) for r in recs)
    reader = RecordReader()
    out: list[Record] = []
    pos = 0
    for n in cuts:
        out += reader.feed(stream[pos : pos + n])
        pos += n
    out += reader.feed(stream[pos:])
    assert out == recs and reader.pending == 0 and reader.cut() == 0


def test_an_incomplete_last_record_is_reported() -> None:
    data = encode(Record(Type.CHUNK, 1, 0, 1, 1, 0, 0, b"x" * 100))
    reader = RecordReader()
    assert reader.feed(data[:-10]) == []
    assert reader.cut() == len(data) - 10


def test_a_long_record_arriving_in_pieces_is_read_in_linear_time() -> None:
    payload = b"y" * (64 << 20)
    data = HEADER.pack(len(payload), Type.MESSAGE, 1, 0, 1, 1, 0, 0) + payload
    reader = RecordReader()
    out = []
    for i in range(0, len(data), 65536):
        out += reader.feed(data[i : i + 65536])
    assert len(out) == 1 and out[0].payload == payload
    # 1025 pieces, and the held bytes were looked at again once: when the record was whole
    assert reader.scans == 1

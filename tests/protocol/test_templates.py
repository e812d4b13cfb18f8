"""A frame recognised by its bytes has exactly the fields a full classification finds."""

from __future__ import annotations

import orjson
from hypothesis import example, given, settings
from hypothesis import strategies as st

from acp_proxy.protocol.jsonrpc import Kind, classify
from acp_proxy.protocol.templates import CHUNK_KINDS, LONGEST, PREFIX, message_chunk

HEAD = PREFIX + b's1","update":{"sessionUpdate":"agent_message_chunk",'
HEAD += b'"content":{"type":"text","text":"'


def chunk(text: bytes, sid: bytes = b"s1", kind: bytes = b"agent_message_chunk") -> bytes:
    return (
        PREFIX
        + sid
        + b'","update":{"sessionUpdate":"'
        + kind
        + b'","content":{"type":"text","text":"'
        + text
        + b'"}}}}'
    )


def agrees(raw: bytes) -> tuple[str, str] | None:
    """``message_chunk(raw)``, checked against ``classify``: a match must be a compact,
    clean notification with the same session and kind."""
    got = message_chunk(raw)
    if got is not None:
        info = classify(raw)
        assert info.kind == Kind.NOTIFICATION
        assert info.method == "session/update"
        assert (info.session_id, info.update_kind) == got
        assert info.anomalies == []
        assert (info.id, info.tool_call_id, info.terminal_id, info.error_code) == (None,) * 4
        assert orjson.dumps(orjson.loads(raw)) == raw  # compact: nothing a parser would redo
    return got


def test_the_common_chunk_is_recognised() -> None:
    assert agrees(chunk(b"hello")) == ("s1", "agent_message_chunk")
    assert agrees(chunk("h\u00e9llo \u4e16\u754c".encode())) == ("s1", "agent_message_chunk")
    assert agrees(chunk(rb"a \"quoted\" line\n\tand \\ a backslash")) is not None
    assert agrees(chunk(b"", sid=b"", kind=b"agent_thought_chunk")) == ("", "agent_thought_chunk")
    for kind in CHUNK_KINDS:
        assert agrees(chunk(b"x", kind=kind.encode())) == ("s1", kind)


def test_anything_a_parser_would_see_differently_is_left_to_classify() -> None:
    for text in (
        rb"\u00e9",  # an escape a serialiser would not write
        rb"\/",
        b"\\",  # a backslash escaping the closing quote
        b'"',  # a quote ending the string early
        b"\n",  # a raw control byte
        b"\x7f",
        b"\xff\xfe",  # not UTF-8
        b"\xed\xa0\x80",  # a surrogate in UTF-8 form
    ):
        assert message_chunk(chunk(text)) is None, text
    assert message_chunk(chunk(b"x", sid=b'a"b')) is None
    assert message_chunk(chunk(b"x", sid=b"\xc3\xa9")) is None  # classify keeps such ids
    assert message_chunk(chunk(b"x", kind=b"tool_call")) is None
    assert message_chunk(chunk(b"x") + b"\r") is None
    assert message_chunk(b" " + chunk(b"x")) is None
    assert message_chunk(chunk(b"x")[:-1]) is None
    assert message_chunk(chunk(b"x" * LONGEST)) is None  # past it a parse is as fast
    assert message_chunk(chunk(b"x").replace(b'"text":"x"', b'"text":"x","text":"y"')) is None


_BYTES = st.binary(max_size=40)
_PIECES = st.sampled_from(
    [b"a", b" ", b'"', b"\\", b'\\"', b"\\n", b"\\u0041", b"\\/", b"\x00", b"\x1f", b"\x7f",
     "\u00e9".encode(), b"\xc3", b"\xed\xa0\x80", b"}", b","]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(
    text=st.one_of(_BYTES, st.lists(_PIECES, max_size=12).map(b"".join)),
    sid=st.one_of(st.just(b"s1"), st.binary(max_size=8)),
    kind=st.sampled_from([k.encode() for k in CHUNK_KINDS] + [b"tool_call", b"x"]),
    cut=st.integers(min_value=0, max_value=3),
)
@example(text=b"", sid=b"s1", kind=b"agent_message_chunk", cut=0)
def test_a_match_is_exactly_what_classify_finds(
    text: bytes, sid: bytes, kind: bytes, cut: int
) -> None:
    raw = chunk(text, sid, kind)
    agrees(raw[: len(raw) - cut] if cut else raw)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_after_the_head(tail: bytes) -> None:
    agrees(HEAD + tail)

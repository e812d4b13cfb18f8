"""classify(): derived fields and anomalies, never an exception, never a changed byte."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acp_proxy.protocol.jsonrpc import Kind, classify, decode, id_token


@pytest.mark.parametrize(
    ("raw", "kind", "method", "ident"),
    [
        (
            b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}',
            Kind.REQUEST,
            "initialize",
            "0",
        ),
        (b'{"jsonrpc":"2.0","id":"0","result":null}', Kind.RESPONSE, None, '"0"'),
        (
            b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}',
            Kind.ERROR,
            None,
            "null",
        ),
        (
            b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}',
            Kind.NOTIFICATION,
            "session/cancel",
            None,
        ),
        (
            b'{"jsonrpc":"2.0","id":18446744073709551616,"method":"x"}',
            Kind.REQUEST,
            "x",
            "18446744073709551616",
        ),
        (
            b'{"jsonrpc":"2.0","id":-9223372036854775809,"method":"x"}',
            Kind.REQUEST,
            "x",
            "-9223372036854775809",
        ),
        (b'{"id":1,"method":"x"}', Kind.REQUEST, "x", "1"),
    ],
)
def test_kinds_and_ids(raw: bytes, kind: str, method: str | None, ident: str | None) -> None:
    info = classify(raw)
    assert (info.kind, info.method, info.id) == (kind, method, ident)


def test_big_ints_are_flagged_and_exact() -> None:
    info = classify(b'{"jsonrpc":"2.0","id":18446744073709551616,"method":"x"}')
    assert "big_int" in info.anomalies
    assert classify(b'{"jsonrpc":"2.0","id":18446744073709551615,"method":"x"}').anomalies == []


def test_acp_fields() -> None:
    info = classify(
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1",'
        b'"update":{"sessionUpdate":"terminal_output_chunk","terminalId":"t1","data":"eA=="}}}'
    )
    assert (info.session_id, info.update_kind, info.terminal_id) == (
        "sess_1",
        "terminal_output_chunk",
        "t1",
    )
    perm = classify(
        b'{"jsonrpc":"2.0","id":5,"method":"session/request_permission","params":'
        b'{"sessionId":"s","title":"Run?","subject":{"type":"command","command":"ls",'
        b'"cwd":"/","toolCallId":"call_1","terminalId":"term_1"},"options":[]}}'
    )
    assert (perm.tool_call_id, perm.terminal_id) == ("call_1", "term_1")
    v1 = classify(
        b'{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":'
        b'{"sessionId":"s","toolCall":{"toolCallId":"c9"},"options":[]}}'
    )
    assert v1.tool_call_id == "c9"
    new = classify(b'{"jsonrpc":"2.0","id":1,"result":{"sessionId":"sess_9"}}')
    assert new.session_id == "sess_9"
    err = classify(b'{"jsonrpc":"2.0","id":1,"error":{"code":-32800,"message":"cancelled"}}')
    assert err.error_code == -32800


def test_anomalies_whitespace_and_python_style_json() -> None:
    spaced = classify(b'{"jsonrpc": "2.0", "method": "x", "params": {"a": "\\u00e9"}}')
    assert spaced.kind == Kind.NOTIFICATION and spaced.anomalies == []
    assert classify(b"  ").anomalies == ["empty"]
    assert classify(b"[]").anomalies == ["batch", "empty_batch"]
    assert "not_jsonrpc" in classify(b"42").anomalies
    assert "no_version" in classify(b'{"method":"x"}').anomalies


def test_unknown_and_custom_payloads_are_classified_not_rejected() -> None:
    info = classify(
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s",'
        b'"update":{"sessionUpdate":"_vendor_thing","x":1},"_meta":{"k":1}}}'
    )
    assert info.update_kind == "_vendor_thing" and info.anomalies == []


@given(st.binary(max_size=300))
def test_never_raises(raw: bytes) -> None:
    info = classify(raw)
    assert info.kind in {
        Kind.REQUEST,
        Kind.NOTIFICATION,
        Kind.RESPONSE,
        Kind.ERROR,
        Kind.BATCH,
        Kind.INVALID,
    }
    decode(raw)


def test_id_tokens_keep_types_apart() -> None:
    assert id_token(1) != id_token("1")
    assert id_token(None) == "null"


def test_whitespace_around_json_is_flagged_but_crlf_and_bom_alone_are_not() -> None:
    assert "whitespace" in classify(b' {"jsonrpc":"2.0","method":"x"}\t').anomalies
    assert classify(b'{"jsonrpc":"2.0","method":"x"}\r').anomalies == ["crlf"]
    assert classify(b'\xef\xbb\xbf{"jsonrpc":"2.0","method":"x"}').anomalies == ["bom"]

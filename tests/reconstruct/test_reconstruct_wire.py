"""Messages and pairing: per-direction id spaces, batches, exact id tokens."""

from __future__ import annotations

from acp_proxy.protocol.frames import Direction, Frame
from acp_proxy.reconstruct.wire import Pairer

C2A, A2C = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT


def _f(seq: int, d: Direction, raw: bytes) -> Frame:
    return Frame(seq, d, seq, raw)


def test_same_id_in_flight_both_ways_pairs_with_the_other_direction() -> None:
    p = Pairer()
    p.messages(_f(0, C2A, b'{"jsonrpc":"2.0","id":0,"method":"session/prompt","params":{}}'))
    p.messages(_f(1, A2C, b'{"jsonrpc":"2.0","id":0,"method":"fs/read_text_file","params":{}}'))
    [r1] = p.messages(_f(2, C2A, b'{"jsonrpc":"2.0","id":0,"result":{"content":""}}'))
    [r2] = p.messages(_f(3, A2C, b'{"jsonrpc":"2.0","id":0,"result":{"stopReason":"end_turn"}}'))
    assert r1.request is not None and r1.request.method == "fs/read_text_file"
    assert r2.request is not None and r2.request.method == "session/prompt"


def test_number_and_string_ids_differ() -> None:
    p = Pairer()
    p.messages(_f(0, C2A, b'{"jsonrpc":"2.0","id":1,"method":"a"}'))
    [r] = p.messages(_f(1, A2C, b'{"jsonrpc":"2.0","id":"1","result":{}}'))
    assert r.request is None
    [r] = p.messages(_f(2, A2C, b'{"jsonrpc":"2.0","id":1,"result":{}}'))
    assert r.request is not None and r.request.method == "a"


def test_batch_entries_are_messages_of_one_frame() -> None:
    p = Pairer()
    ms = p.messages(
        _f(0, C2A, b'[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"},7]')
    )
    assert [(m.kind, m.method, m.seq) for m in ms] == [
        ("request", "a", 0),
        ("notification", "b", 0),
    ]
    [r] = p.messages(_f(1, A2C, b'[{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}]'))
    assert r.kind == "error" and r.request is not None


def test_invalid_frames_yield_nothing() -> None:
    p = Pairer()
    assert p.messages(_f(0, C2A, b"not json")) == []
    assert p.messages(_f(1, C2A, b"")) == []
    assert p.messages(_f(2, C2A, b'{"jsonrpc":"2.0"}')) == []


def test_session_comes_from_the_request_for_responses() -> None:
    p = Pairer()
    p.messages(
        _f(
            0,
            A2C,
            b'{"jsonrpc":"2.0","id":5,"method":"fs/read_text_file","params":{"sessionId":"s"}}',
        )
    )
    [r] = p.messages(_f(1, C2A, b'{"jsonrpc":"2.0","id":5,"result":{}}'))
    assert r.session_id == "s"

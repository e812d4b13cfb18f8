"""The recorder core as playbooks: journal records in, database rows out.

Each input is a record as a relay's tap writes it (``Chunk`` carries its stream position,
kept by the driver as the tap keeps it); each output a row of :mod:`acp_proxy.record.core.rows`
in a short form (``records.py``). Progress columns (message count, stream positions,
``rseq``) are left out of ``Fields`` and read with ``Progress()``, so a script says only what
a step changed.
"""

from __future__ import annotations

from records import (
    A2C,
    C2A,
    ENDED_AT,
    Again,
    Chunk,
    Close,
    End,
    Err,
    Event,
    Fields,
    Finish,
    Frame,
    Gap,
    Happened,
    Item,
    Lost,
    Mark,
    Msg,
    Open,
    Opened,
    Progress,
    Stderr,
    Undelivered,
    recorder,
)

from acp_proxy.record.core.wire import Flag


def rpc(text: str) -> bytes:
    return b'{"jsonrpc":"2.0",' + text.encode() + b"}"


INIT = rpc('"id":0,"method":"initialize","params":{"protocolVersion":1}')
INIT_OK = rpc('"id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"ag"}}')
PING = rpc('"id":1,"method":"_x/ping"')
PONG = rpc('"id":1,"result":{}')


# -- the playbooks -------------------------------------------------------------------------


def test_lines_are_cut_across_reads_numbered_in_arrival_order_and_paired() -> None:
    assert (
        recorder()
        >> Open()
        << Opened("u1")
        >> Chunk(C2A, INIT[:10])  # half a line: nothing yet
        >> Chunk(A2C, INIT_OK + b"\n")  # an answer can arrive before its request is whole
        << Frame(0, "a2c", INIT_OK, ("unpaired_response",))
        >> Chunk(C2A, INIT[10:] + b"\n" + PING + b"\n")
        << Frame(1, "c2a", INIT)
        << Frame(2, "c2a", PING)
        << Fields(protocol_version=1)  # the client's; no agent answer was paired with it
        >> Chunk(A2C, PONG + b"\n")
        << Frame(3, "a2c", PONG, answers=2)
        >> Progress()
        << Fields(message_count=4, rseq=0, c2a_position=122, a2c_position=119)
    )


def test_initialize_teaches_the_version_and_the_peers() -> None:
    assert (
        recorder()
        >> Open()
        << Opened("u1")
        >> Chunk(C2A, INIT + b"\n")
        << Frame(0, "c2a", INIT)
        << Fields(protocol_version=1)
        >> Chunk(A2C, INIT_OK + b"\n")
        << Frame(1, "a2c", INIT_OK, answers=0)
        << Fields(protocol_version=1, agent_info='{"name":"ag"}')
    )


def test_a_hole_in_a_stream_is_a_gap_and_the_line_it_cut_is_kept_flagged() -> None:
    assert (
        recorder()
        >> Open()
        << Opened("u1")
        >> Chunk(C2A, PING[:8])
        >> Chunk(C2A, b"tail of a lost line\n" + PING + b"\n", at=100)
        << Frame(0, "c2a", PING[:8], ("not_json", "truncated"), terminated=False)
        << Gap("c2a", 8, 100, after=0)
        << Frame(1, "c2a", b"tail of a lost line", ("not_json", "resumed"))
        << Frame(2, "c2a", PING)
    )


def test_records_read_again_add_nothing() -> None:
    ping2 = rpc('"id":2,"method":"_x/ping"')
    assert (
        recorder()
        >> Open()
        << Opened("u1")
        >> Chunk(C2A, PING + b"\n" + ping2[:5])
        << Frame(0, "c2a", PING)
        >> Err(b"warming up\n")
        << Stderr(b"warming up\n")
        >> Again(2)  # a recorder that starts over reads from its last commit
        >> Open()  # the same capture opened again is the same capture
        >> Chunk(C2A, ping2[5:] + b"\n")
        << Frame(1, "c2a", ping2)
    )


def test_a_relay_that_died_leaves_its_last_line_unterminated_and_the_capture_ended() -> None:
    half = b'{"jsonrpc":"2.0","method":"session/upd'
    assert (
        recorder()
        >> Open()
        << Opened("u1")
        >> Chunk(A2C, half)
        >> Finish()
        << Frame(0, "a2c", half, ("not_json", "unterminated"), terminated=False)
        << Fields(end_reason="proxy_gone", ended_at=ENDED_AT, ended_ns=10)
        >> Finish()  # closed already: nothing more
    )


def test_a_stream_that_ends_without_a_newline_keeps_its_last_line() -> None:
    assert (
        recorder()
        >> Open()
        << Opened("u1")
        >> Chunk(A2C, PONG + b"\r\n" + PONG)  # CRLF stays: the \r is part of the frame
        << Frame(0, "a2c", PONG + b"\r", ("crlf", "unpaired_response"))
        >> End(A2C)
        << Frame(1, "a2c", PONG, ("unterminated", "unpaired_response"), terminated=False)
    )


def test_a_close_that_says_more_was_sent_than_arrived_writes_the_gap() -> None:
    assert (
        recorder()
        >> Open()
        << Opened("u1")
        >> Chunk(C2A, PING + b"\n")
        << Frame(0, "c2a", PING)
        >> Close(positions={C2A: len(PING) + 1 + 500})
        << Gap("c2a", len(PING) + 1, len(PING) + 501, after=0)
        << Fields(exit_code=0, ended_ns=15, end_reason="closed")
    )


def test_what_the_journal_could_not_hold_is_a_counted_gap() -> None:
    assert (
        recorder()
        >> Open()
        << Opened("u1")
        >> Lost(A2C, 0, 4096, frames=12)
        << Gap("a2c", 0, 4096, "journal full", frames=12)
        >> Chunk(A2C, PONG + b"\n")
        << Frame(0, "a2c", PONG, ("resumed", "unpaired_response"))
        >> Lost(A2C, 0, 100)  # recorded already: nothing
    )


def test_websocket_messages_keep_their_opcode_and_flags() -> None:
    oversize = Flag.OVERSIZE | Flag.UNDELIVERED
    assert (
        recorder()
        >> Open()
        << Opened("u1")
        >> Msg(C2A, PING)
        << Frame(0, "c2a", PING, terminated=False, opcode="text")
        >> Msg(A2C, b"\x00\xff", Flag.BINARY)
        << Frame(1, "a2c", b"\x00\xff", ("binary",), terminated=False, opcode="binary")
        >> Msg(C2A, PING, Flag.TERMINATED)  # a bridge's stdio leg: a line that ended in \n
        << Frame(2, "c2a", PING, ("duplicate_request_id",), opcode="text")  # id 1 in flight
        >> Msg(C2A, b'{"method":"b', oversize)  # the first piece of a line over the limit
        << Frame(3, "c2a", b'{"method":"b', ("not_json", "split", "undelivered"), terminated=False)
    )


def test_bytes_the_peer_never_got_are_marked_undelivered() -> None:
    two = PING + b"\n" + rpc('"id":2,"method":"_x/ping"') + b"\n"
    assert (
        recorder()
        >> Open()
        << Opened("u1")
        >> Chunk(C2A, two)
        << Frame(0, "c2a", PING)
        << Frame(1, "c2a", rpc('"id":2,"method":"_x/ping"'))
        >> Undelivered(C2A, 0)  # writing that chunk to the agent failed
        << Mark(0, 1, "undelivered")
        >> Chunk(C2A, rpc('"id":3,"method":"_x/ping"') + b"\n")  # and everything after it
        << Frame(2, "c2a", rpc('"id":3,"method":"_x/ping"'), ("undelivered",))
    )


def test_batches_pair_entry_by_entry_and_a_null_id_error_answers_the_unreadable() -> None:
    batch = b'[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"n"}]'
    answer = b'[{"jsonrpc":"2.0","id":1,"result":{}}]'
    parse_error = rpc('"id":null,"error":{"code":-32700,"message":"Parse error"}')
    assert (
        recorder()
        >> Open()
        << Opened("u1")
        >> Chunk(C2A, batch + b"\n")
        << Item(0, 0, "a")
        << Item(0, 1, "n")
        << Frame(0, "c2a", batch, ("batch",))
        >> Chunk(A2C, answer + b"\n")
        << Item(1, 0, "a", answers=0)
        << Frame(1, "a2c", answer, ("batch",))
        >> Chunk(C2A, b"{oops\n")
        << Frame(2, "c2a", b"{oops", ("not_json",))
        >> Chunk(A2C, parse_error + b"\n")
        << Frame(3, "a2c", parse_error, ("null_id",), answers=2)
    )


def test_stderr_and_events_are_rows_of_their_own() -> None:
    assert (
        recorder()
        >> Open()
        << Opened("u1")
        >> Err(b"Traceback (most recent call last):\n")
        << Stderr(b"Traceback (most recent call last):\n")
        >> Event("agent_exit")
        << Happened("agent_exit")
        >> Err(b"\x1b[31mno newline")  # bytes as written: never cut into lines
        << Stderr(b"\x1b[31mno newline")
    )

"""Terminals: v2 terminal_update / terminal_output_chunk rules, v1 client terminals, screens."""

from __future__ import annotations

import base64
import json

from hypothesis import given, settings
from hypothesis import strategies as st
from support.paths import DATA

from acp_proxy.export.jsonl import read_jsonl
from acp_proxy.protocol.frames import Direction, Frame
from acp_proxy.reconstruct import reconstruct, render_screen
from acp_proxy.reconstruct.terminals import _emulate, _plain_layout
from acp_proxy.reconstruct.views import terminals_json

DATA = DATA / "reconstruct"
S = "sess_1"


def _frames(*messages: dict[str, object], version: int = 2) -> list[Frame]:
    init = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": version}},
        {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": version}},
    ]
    out = []
    for i, m in enumerate([*init, *messages]):
        d = Direction.CLIENT_TO_AGENT if i == 0 else Direction.AGENT_TO_CLIENT
        out.append(Frame(i, d, i * 1_000_000, json.dumps(m).encode()))
    return out


def _upd(**u: object) -> dict[str, object]:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": S, "update": u}}


def _chunk(tid: str, data: bytes) -> dict[str, object]:
    return _upd(
        sessionUpdate="terminal_output_chunk", terminalId=tid, data=base64.b64encode(data).decode()
    )


def _fixture() -> dict[str, dict[str, object]]:
    with open(DATA / "v2-terminals.jsonl", "rb") as f:
        r = reconstruct(read_jsonl(f))
    return {t["terminalId"]: t for t in terminals_json(r)}


def test_utf8_split_across_chunks_decodes_once_whole() -> None:
    check = "✔".encode()
    r = reconstruct(
        _frames(
            _chunk("t", b"a" + check[:1]), _chunk("t", check[1:2]), _chunk("t", check[2:] + b"b")
        )
    )
    t = r.terminals[(S, "t")]
    assert bytes(t.output) == b"a" + check + b"b"
    assert t.text == "a✔b"
    assert [e.text for e in t.events if e.kind == "chunk"] == ["a", "", "✔b"]


def test_incomplete_trailing_code_point_shows_replacement_but_keeps_bytes() -> None:
    r = reconstruct(_frames(_chunk("t", b"x\xe2\x9c")))
    t = r.terminals[(S, "t")]
    assert bytes(t.output) == b"x\xe2\x9c"
    assert t.text == "x\ufffd"


def test_bytes_that_are_not_utf8_show_as_replacement_and_stay_exact() -> None:
    # binary output (`cat` of an executable) must not stop the fold: every view reads it
    check = "✔".encode()
    r = reconstruct(_frames(_chunk("t", b"a\xff" + check[:1]), _chunk("t", check[1:] + b"\xc3(")))
    t = r.terminals[(S, "t")]
    assert bytes(t.output) == b"a\xff" + check + b"\xc3("
    assert t.text == "a\ufffd✔\ufffd("
    [view] = terminals_json(r)
    assert view["screen"] == ["a\ufffd✔\ufffd("]


def test_each_chunk_is_decoded_on_its_own() -> None:
    # "YQ==" + "Yg==" concatenated would not decode to b"ab"
    frames = _frames(
        _upd(sessionUpdate="terminal_output_chunk", terminalId="t", data="YQ=="),
        _upd(sessionUpdate="terminal_output_chunk", terminalId="t", data="Yg=="),
    )
    assert bytes(reconstruct(frames).terminals[(S, "t")].output) == b"ab"


def test_escape_sequence_split_across_chunks_renders() -> None:
    r = reconstruct(_frames(_chunk("t", b"\x1b[3"), _chunk("t", b"1mred\x1b[0m plain")))
    assert r.terminals[(S, "t")].screen() == ["red plain"]


def test_snapshot_replaces_all_bytes_and_later_chunks_append() -> None:
    t = _fixture()["term_1"]
    out = base64.b64decode(str(t["output_base64"]))
    assert (
        out
        == b"snapshot line\r\nafter \xe2\x9c\x94 done, this line is longer than twenty columns\r\n"
    )
    assert b"running 4 tests" not in out
    assert t["text"] == out.decode()
    # width from size {cols: 20}: the long line wraps at 20 columns
    assert t["screen"] == [
        "snapshot line",
        "after ✔ done, this l",
        "ine is longer than t",
        "wenty columns",
    ]


def test_patch_semantics_of_terminal_update() -> None:
    t = _fixture()["term_1"]
    assert t["command"] == "cargo test" and t["cwd"] == "/home/u/proj"
    assert t["capabilities"] is None  # set, then cleared with null
    assert t["_meta"] == {"x.example/b": 2, "x.example/c": 3}  # key null removed, key added
    assert t["exitStatus"] == {"exitCode": 0, "signal": None}
    t3 = _fixture()["term_3"]
    assert t3["exitStatus"] is None and t3["command"] is None and t3["output_base64"] == ""


def test_anchor_before_and_after_first_update() -> None:
    terms = _fixture()
    assert terms["term_1"]["toolCallIds"] == ["call_1"]  # anchor came first
    assert terms["term_2"]["toolCallIds"] == ["call_2"]  # update came first
    assert terms["term_2"]["command"] == "sleep 100"
    assert terms["term_2"]["exitStatus"] == {"exitCode": None, "signal": "SIGTERM"}
    events = [e["event"] for e in terms["term_2"]["timeline"]]  # type: ignore[union-attr]
    assert events == ["update", "chunk", "anchor", "cancel", "update", "exit"]


def test_v1_client_terminal_lifecycle() -> None:
    with open(DATA / "v1-edges.jsonl", "rb") as f:
        r = reconstruct(read_jsonl(f))
    [t] = terminals_json(r)
    assert t["owner"] == "client" and t["command"] == "yes" and t["outputByteLimit"] == 8
    assert base64.b64decode(str(t["output_base64"])) == b"y\ny\ny\ny\n"  # the last output wins
    assert t["truncated"] is True and t["killed"] is True and t["released"] is True
    assert t["exitStatus"] == {"exitCode": None, "signal": "SIGKILL"}
    assert t["toolCallIds"] == ["x1"]
    assert t["screen"] == ["y", "y", "y", "y"]


def test_v1_terminal_content_is_not_agent_owned() -> None:
    frames = _frames(
        _upd(
            sessionUpdate="tool_call",
            toolCallId="c",
            title="t",
            content=[{"type": "terminal", "terminalId": "t9"}],
        ),
        version=1,
    )
    assert reconstruct(frames).terminals[(S, "t9")].owner == "client"


def test_render_screen_applies_carriage_returns_colours_and_cursor_moves() -> None:
    text = "\x1b[1mbold\x1b[0m\nrunning 1/3\rrunning 3/3\n\x1b[2Aup"
    assert render_screen(text, 40) == ["upld", "running 3/3"]
    assert render_screen(text + "\x1b[K", 40) == ["up", "running 3/3"]
    assert render_screen("a\nb\n") == ["a", "b"]
    assert render_screen("") == []


def test_render_screen_keeps_lines_beyond_the_terminal_height() -> None:
    text = "".join(f"line {i}\n" for i in range(100))
    lines = render_screen(text, 20, 5)
    assert len(lines) == 100 and lines[-1] == "line 99"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(["a", "bc", " ", "\n", "\r\n", "✔", "\x1b[31m", "\x1b[0m", "xyzzy"]),
        max_size=40,
    ),
    st.integers(min_value=1, max_value=9),
)
def test_the_plain_layout_shortcut_matches_the_emulator(parts: list[str], width: int) -> None:
    text = "".join(parts)
    fast = _plain_layout(text, width)
    assert fast is not None
    slow = _emulate(text, width, 24)
    while fast and not fast[-1]:
        fast.pop()
    while slow and not slow[-1]:
        slow.pop()
    assert fast == slow


def test_output_with_controls_goes_through_the_emulator() -> None:
    assert _plain_layout("a\rb", 10) is None
    assert _plain_layout("\x1b[2Kx", 10) is None
    assert _plain_layout("中", 10) is None


def test_malformed_terminal_update_fields_are_ignored() -> None:
    r = reconstruct(
        _frames(
            _upd(sessionUpdate="terminal_update", terminalId="t", size={"cols": 9, "rows": 2}),
            _upd(sessionUpdate="terminal_update", terminalId="t", size="big", exitStatus=3),
        )
    )
    t = r.terminals[(S, "t")]
    assert t.size == {"cols": 9, "rows": 2} and t.exit_status is None

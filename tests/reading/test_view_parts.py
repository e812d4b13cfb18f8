"""``show --view turns``, ``permissions``, ``sessions`` and ``files``, and the inspector's
views past the fold limit (the messages between sessions, the MCP calls, the tool calls of
the state at a frame), fold only the parts they show, count a terminal's updates (and the
message chunks, where sessions are not kept) from the fields the recorder derived without
reading their bytes, number the frames of methods they keep nothing of (a terminal's, a
file's) without reading them, and fold message chunks from their update alone
(acp_proxy/reading/views.py ``PARTS_OF``, acp_proxy/ui/folds.py ``PARTS``): their JSON, byte
for byte, and text are those of the fold of every frame — for the bundled captures, at
points along them and per session, and hostile ones."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support.messages import A, C, frame_bytes, frames_of, import_frames, initialize
from support.paths import DATA, RECORDINGS

from acp_proxy.export.load import import_file
from acp_proxy.protocol.frames import Opcode
from acp_proxy.reading import open_capture, reconstruction
from acp_proxy.reading.capture import OpenCapture
from acp_proxy.reading.views import PARTS_OF, WITHOUT_TEXT, fold_since, read_text
from acp_proxy.reconstruct import Reconstruction
from acp_proxy.reconstruct.updates import SESSIONS
from acp_proxy.reconstruct.views import tools_json
from acp_proxy.text.safe import json_bytes
from acp_proxy.text.style import plain
from acp_proxy.text.views import files_lines, permissions_lines, sessions_lines, turns_lines
from acp_proxy.ui.api import PARTS, VIEWS

CAPTURES = sorted(RECORDINGS.glob("*.jsonl")) + sorted((DATA / "reconstruct").glob("*.jsonl"))


_LINES: dict[str, Callable[[Reconstruction], Iterator[Any]]] = {
    "turns": turns_lines,
    "permissions": permissions_lines,
    "sessions": sessions_lines,
    "files": files_lines,
}
_JSON = {**VIEWS, "tools": tools_json}
# each view and the parts it is folded from; the tool calls as the state at a frame reads them
_PARTED = [*PARTS.items(), ("tools", frozenset({SESSIONS}))]
assert set(PARTS_OF.items()) <= set(PARTS.items())


def _shown(view: str, r: Reconstruction) -> tuple[bytes, list[str]]:
    lines = _LINES.get(view)
    return json_bytes(_JSON[view](r)), [plain(line) for line in lines(r)] if lines else []


def _assert_parts_fold_as_every_frame(db: Path, capture: str, ats: tuple[int | None, ...]) -> None:
    with open_capture(db, capture) as cap:
        whole = reconstruction(cap)
        sessions = sorted(s for s in {*whole.sessions, *(t.session_id for t in whole.turns)} if s)
        for view, parts in _PARTED:
            for at in ats:
                for session in (None, *sessions):
                    got = reconstruction(cap, at, session=session, parts=parts)
                    every = reconstruction(cap, at, session=session)
                    assert _shown(view, got) == _shown(view, every), (view, at, session)
                    if SESSIONS in parts:
                        later = reconstruction(cap, at, session=session, parts=parts, text=False)
                        if view in WITHOUT_TEXT:  # shown with no text read
                            assert _shown(view, later) == _shown(view, every), (view, at)
                        _read_text_a_page_first(cap, later)
                        assert _shown(view, later) == _shown(view, every), (view, at, session)
                if SESSIONS in parts:  # folded up to each point, then up to the end
                    _assert_grows_as_every_frame(cap, view, parts, ats, whole)


def _assert_grows_as_every_frame(
    cap: OpenCapture,
    view: str,
    parts: frozenset[str],
    ats: tuple[int | None, ...],
    whole: Reconstruction,
) -> None:
    """A fold of a capture being recorded, made up to a frame then brought up to date with
    the frames since (the inspector's live capture): its view is the whole fold's."""
    for at in (at for at in ats if at is not None):
        grown = reconstruction(cap, at, parts=parts, text=False)
        read_text(cap.source.store, cap.id, grown.turns)  # a page read before it grows
        fold_since(cap, grown, text=False)
        _read_text_a_page_first(cap, grown)
        assert _shown(view, grown) == _shown(view, whole), (view, at)


def _read_text_a_page_first(cap: OpenCapture, r: Reconstruction) -> None:
    """The turns' text left in the frames, read as the inspector reads it: the last turn's
    (a page), then all; a turn's text asked for before it is read is refused."""
    assert cap.source.store is not None
    for turn in r.turns:
        if turn.pending:
            with pytest.raises(LookupError):
                turn.text("agent")
    read_text(cap.source.store, cap.id, r.turns[-1:])
    read_text(cap.source.store, cap.id, r.turns)


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.name)
def test_turns_and_permissions_read_as_every_frame_folds(path: Path, tmp_path: Path) -> None:
    db = tmp_path / "parts.sqlite"
    [imported] = import_file(db, path)
    ats = (None, *range(0, imported.frames, max(1, imported.frames // 6)))
    _assert_parts_fold_as_every_frame(db, str(imported.capture_id), ats)


def _update(sid: object, **u: object) -> dict[str, object]:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": u}}


_SIDS = st.sampled_from(["s", "", 5, None, "other"])
_TERMINAL_UPDATES = st.builds(
    lambda sid, kind: _update(sid, sessionUpdate=kind, terminalId="t", data="aGk="),
    _SIDS,
    st.sampled_from(["terminal_output_chunk", "terminal_update"]),
)
_CHUNKS = st.builds(
    lambda sid, kind, mid, text: _update(
        sid, sessionUpdate=kind, messageId=mid, content={"type": "text", "text": text}
    ),
    _SIDS,
    st.sampled_from(["agent_message_chunk", "agent_thought_chunk"]),
    st.sampled_from(["m1", "m2", None]),
    st.text(max_size=5),
)
_RUNS = st.builds(  # chunks one after the other, as most of a long turn is
    lambda sid, kind, texts: [
        _update(sid, sessionUpdate=kind, content={"type": "text", "text": t}) for t in texts
    ],
    _SIDS,
    st.sampled_from(["agent_message_chunk", "agent_thought_chunk"]),
    st.lists(st.text(max_size=3), min_size=2, max_size=5),
)
_UPSERTS = st.builds(  # v2: a whole message, replacing its chunks or cleared
    lambda sid, kind, mid, content: _update(sid, sessionUpdate=kind, messageId=mid, **content),
    _SIDS,
    st.sampled_from(["agent_message", "agent_thought"]),
    st.sampled_from(["m1", "m2", None]),
    st.sampled_from([{}, {"content": None}, {"content": [{"type": "text", "text": "w"}]}]),
)
_PROMPTS = st.builds(
    lambda sid, n: {"jsonrpc": "2.0", "id": 900 + n, "method": "session/prompt",
                    "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}},
    _SIDS,
    st.integers(0, 3),
)  # fmt: skip

_ASKS = st.builds(  # the agent's requests, some of methods the sessions part keeps nothing of,
    lambda method, n, sid: {"jsonrpc": "2.0", "id": n, "method": method,  # ids that collide
                            "params": {"sessionId": sid, "terminalId": "t", "path": "/a",
                                       "toolCall": {"toolCallId": "c"}, "options": []}},
    st.sampled_from(["terminal/create", "terminal/output", "terminal/wait_for_exit",
                     "terminal/release", "fs/read_text_file", "fs/write_text_file",
                     "session/request_permission"]),
    st.integers(1, 3),
    _SIDS,
)  # fmt: skip
_ANSWERS = st.builds(
    lambda n, ok: {"jsonrpc": "2.0", "id": n, "result": {"outcome": {"outcome": "cancelled"},
                   "terminalId": "t", "output": "o", "content": "x"}} if ok else
                  {"jsonrpc": "2.0", "id": n, "error": {"code": -1, "message": "no"}},
    st.integers(1, 3),
    st.booleans(),
)  # fmt: skip
_CANCELS = st.builds(
    lambda n: {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": n}},
    st.integers(1, 3),
)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hostile-parts")


def _agent(*messages: dict[str, object]) -> list[tuple[object, bytes, object]]:
    return [(None, json.dumps(m, separators=(",", ":")).encode(), None) for m in messages]


_ANSWERED_IN_A_BATCH = [  # a batch answers a terminal request the fold leaves unread
    ("c2a", b'{"jsonrpc":"2.0","id":0,"method":"session/new","params":{"cwd":"/w"}}', None),
    (None, b'{"jsonrpc":"2.0","id":0,"result":{"sessionId":"s"}}', None),
    (
        None,
        b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"sessionId":"s","cwd":"/x"}}',
        Opcode.BINARY,
    ),  # a binary frame the recorder does not pair, but the fold does
    (None, b'{"jsonrpc":"2.0","id":1,"method":"terminal/create","params":{"sessionId":"s"}}', None),
    ("c2a", b'[{"jsonrpc":"2.0","id":1,"result":null}]', None),
]  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 2),
    st.lists(
        st.one_of(
            frame_bytes().map(lambda f: [f]),
            st.one_of(_TERMINAL_UPDATES, _CHUNKS, _UPSERTS).map(_agent),
            _RUNS.map(lambda run: _agent(*run)),
            _PROMPTS.map(lambda m: [("c2a", json.dumps(m).encode(), None)]),
            st.one_of(_ASKS, _CANCELS).map(_agent),
            _ANSWERS.map(lambda m: [("c2a", json.dumps(m).encode(), None)]),
        ),
        max_size=20,
    ).map(lambda runs: [item for run in runs for item in run]),
    st.integers(0, 35),
)
@example(1, _ANSWERED_IN_A_BATCH, 40)
def test_hostile_captures_read_as_every_frame_folds(
    work: Path, version: int, items: list[tuple[object, bytes, object]], at: int
) -> None:
    from acp_proxy.protocol.frames import Direction

    init = [(d, json.dumps(m).encode(), None) for d, m in initialize(version)]
    agent, client = Direction.AGENT_TO_CLIENT, Direction.CLIENT_TO_AGENT
    ours = {None: agent, "c2a": client}  # updates come from the agent, prompts from the client
    items = [(ours.get(d, d), raw, op) for d, raw, op in items]  # type: ignore[call-overload]
    frames = frames_of([*init, *items])  # type: ignore[list-item]
    db = work / f"hostile-{len(list(work.iterdir()))}.sqlite"
    cid = import_frames(db, frames, work)
    _assert_parts_fold_as_every_frame(db, str(cid), (None, at))


def test_a_run_of_chunks_across_a_missing_frame_reads_as_every_frame_folds(tmp_path: Path) -> None:
    """A capture whose ``seq`` skip one (a frame deleted; a run's length is then not where
    the next frame begins): folded frame by frame, as every frame folds."""
    import sqlite3

    prompt = {"jsonrpc": "2.0", "id": 7, "method": "session/prompt",
              "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "go"}]}}  # fmt: skip
    chunks = [
        _update("s", sessionUpdate="agent_message_chunk", content={"type": "text", "text": t})
        for t in "abcdef"
    ]
    answer = b'{"jsonrpc":"2.0","id":7,"result":{"stopReason":"end_turn"}}'
    init = [(d, json.dumps(m).encode(), None) for d, m in initialize(1)]
    items = [*init, (C, json.dumps(prompt).encode(), None), *_agent(*chunks), (None, answer, None)]
    frames = frames_of([(A if d is None else d, raw, op) for d, raw, op in items])  # type: ignore[misc]
    db = tmp_path / "gap.sqlite"
    cid = import_frames(db, frames, tmp_path)
    missing = len(init) + 3  # the third chunk
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM messages WHERE capture_id = ? AND seq = ?", [cid, missing])
    _assert_parts_fold_as_every_frame(db, str(cid), (None, missing, missing + 1))
    with open_capture(db, str(cid)) as cap:
        [turn] = reconstruction(cap, parts=frozenset({SESSIONS}), text=False).turns
        read_text(cap.source.store, cap.id, [turn])
        assert turn.text("agent") == "abdef"


def test_text_whose_frames_are_gone_is_an_error_not_a_wrong_text(tmp_path: Path) -> None:
    """A capture removed (or pruned) between its fold and the reading of its text."""
    import sqlite3

    from acp_proxy.errors import StoreError

    [imported] = import_file(tmp_path / "gone.sqlite", RECORDINGS / "demo-v1.jsonl")
    with open_capture(tmp_path / "gone.sqlite", str(imported.capture_id)) as cap:
        r = reconstruction(cap, parts=frozenset({SESSIONS}), text=False)
        assert any(t.pending for t in r.turns)
        with sqlite3.connect(tmp_path / "gone.sqlite") as conn:
            conn.execute("DELETE FROM messages WHERE update_kind = 'agent_message_chunk'")
        assert cap.source.store is not None
        with pytest.raises(StoreError, match="lost frames while it was read"):
            read_text(cap.source.store, cap.id, r.turns)

"""The fold as a whole: the docs/protocol.md §9.2 example, state at a seq, robustness."""

from __future__ import annotations

import base64

from hypothesis import given, settings
from hypothesis import strategies as st
from support.messages import initialize, message
from support.paths import DATA, PACKAGE

from acp_proxy.export.jsonl import read_jsonl
from acp_proxy.protocol.frames import Direction, Frame
from acp_proxy.reconstruct import reconstruct
from acp_proxy.reconstruct.views import reconstruction_json, terminals_json

DATA = DATA / "reconstruct"
C, A = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT


def _example() -> list[Frame]:
    """docs/protocol.md §9.2, verbatim (tests/test_repository.py checks): ``C→ {json}`` lines."""
    text = (DATA / "protocol-9.2-v2.txt").read_text(encoding="utf-8")
    lines = [(C if line.startswith("C→") else A, line[3:]) for line in text.splitlines()]
    return _frames(lines)


def _frames(lines: list[tuple[Direction, str]]) -> list[Frame]:
    return [Frame(i, d, i * 1000, raw.encode()) for i, (d, raw) in enumerate(lines)]


def test_protocol_example_v2() -> None:
    r = reconstruct(_example())
    [t] = terminals_json(r)
    assert base64.b64decode(t["output_base64"]) == "running 4 tests\r\n✔ all passed\r\n".encode()
    assert t["screen"] == ["running 4 tests", "✔ all passed"]
    assert t["exitStatus"] == {"exitCode": 0, "signal": None} and t["capabilities"] is None
    assert t["size"] == {"cols": 120, "rows": 30} and t["toolCallIds"] == ["call_1"]
    tc = r.tool_calls[("sess_1", "call_1")]
    assert tc.status == "completed" and tc.capabilities == {"cancel": {}}
    [turn] = r.turns
    assert (turn.stop_reason, turn.ended_seq, turn.message_id) == ("end_turn", 13, "msg_u1")
    changes = [(c.operation, c.path, c.old_path) for c in r.files.changes]
    assert changes == [
        ("modify", "/home/u/proj/Cargo.lock", None),
        ("move", "/home/u/proj/b.txt", "/home/u/proj/a.txt"),
    ]
    assert r.files.changes[0].patch is not None and r.files.changes[1].patch is None


def test_state_at_a_seq_is_the_fold_of_the_frames_up_to_it() -> None:
    frames = _example()
    r = reconstruct(frames, at=8)
    assert r.last_seq == 8
    assert r.terminals[("sess_1", "term_1")].text == "running 4 tests"
    assert r.terminals[("sess_1", "term_1")].exit_status is None
    assert r.turns[0].open and r.tool_calls[("sess_1", "call_1")].status == "in_progress"
    assert reconstruction_json(reconstruct(frames, at=99)) == reconstruction_json(
        reconstruct(frames)
    )
    with open(DATA / "v1-edges.jsonl", "rb") as f:
        all_frames = list(read_jsonl(f))
    for at in range(len(all_frames)):  # every prefix folds without error
        assert reconstruct(all_frames, at=at).last_seq == at


def test_odd_frames_are_survived() -> None:
    lines = [
        (C, "not json at all"),
        (A, ""),
        (A, "[]"),
        (A, '{"jsonrpc":"2.0","method":"session/update","params":"x"}'),
        (
            A,
            '{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"tool_call_update"}}}',
        ),
        (
            A,
            '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"terminal_output_chunk","terminalId":"t","data":"%%%"}}}',
        ),
        (A, '{"jsonrpc":"2.0","id":99,"result":{"stopReason":"end_turn"}}'),
        (
            A,
            '\ufeff{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan","entries":"nope"}}}',
        ),
        (
            A,
            '[{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":1,"size":2}}}]',
        ),
    ]
    r = reconstruct(_frames(lines))
    assert r.frames == len(lines) and r.protocol_version is None
    assert r.terminals[("s", "t")].anomalies == ["output_not_base64"]
    assert r.sessions["s"].plan == [] and r.sessions["s"].usage == {"used": 1, "size": 2}


def test_the_reconstruct_package_stays_pure() -> None:
    """Layer 1 (docs/design.md, "Layers"): no asyncio, sqlite3, websockets, click, printing."""
    import ast

    package = PACKAGE / "reconstruct"
    forbidden = {"asyncio", "sqlite3", "websockets", "click"}
    for path in package.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = {(node.module or "").split(".")[0]}
            elif isinstance(node, ast.ImportFrom):  # relative: only within layers 0-1
                assert node.module in (None, "events", "jsonrpc") or node.level == 1, path
                continue
            else:
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                    assert node.func.id != "print", path
                continue
            assert not names & forbidden, (path, names)


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 2), st.lists(message(), max_size=25))
def test_any_sequence_of_messages_folds_and_renders(
    version: int, messages: list[tuple[Direction, dict[str, object]]]
) -> None:
    import json

    from acp_proxy.export.core.asciicast import asciicast
    from acp_proxy.export.core.patch import session_patch

    frames = _frames([(d, json.dumps(m)) for d, m in [*initialize(version), *messages]])
    r = reconstruct(frames)
    json.dumps(reconstruction_json(r))
    session_patch(r)
    for t in r.terminals.values():
        asciicast(t)

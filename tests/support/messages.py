"""Hypothesis strategies for captures: sequences of ACP messages, well formed or not, for the
property tests of the folds (tests/reconstruct/) and of the views read from the database
(tests/export/test_listing.py); and putting frames in a database through ``acp-proxy
import`` (the recorder's own classification and pairing).

No tests here; the test modules import it.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from acp_proxy.export.load import import_file
from acp_proxy.protocol.frames import Direction, Frame, Opcode

C, A = Direction.CLIENT_TO_AGENT, Direction.AGENT_TO_CLIENT

_PATCH = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n"
values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from(["", "x", "/a", "YQ==", "terminal", "diff", "t", "a", "a\n", _PATCH]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "terminalId",
                    "toolCallId",
                    "path",
                    "content",
                    "changes",
                    "operation",
                    "outcome",
                    "optionId",
                    "text",
                    "data",
                    "oldText",
                    "newText",
                    "patch",
                    "_meta",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=8,
)
_tool_call_ids = st.sampled_from(["a", "b", "", 1])
_terminal_ids = st.sampled_from(["t", "u", "", 2])
content_items = st.one_of(
    values,
    st.builds(lambda t: {"type": "terminal", "terminalId": t}, _terminal_ids),
    st.builds(
        lambda p, old, new: {"type": "diff", "path": p, "oldText": old, "newText": new},
        st.sampled_from(["/w/f", "f", 3]),
        st.sampled_from([None, "a\n", "b\n"]),
        st.sampled_from(["a\n", "b\n", ""]),
    ),
    st.builds(
        lambda op, p, patch: {
            "type": "diff",
            "changes": [{"operation": op, "path": p, "oldPath": "/w/g"}],
            **({"patch": {"format": "git_patch", "text": patch}} if patch else {}),
        },
        st.sampled_from(["add", "modify", "delete", "move", "copy", "_x"]),
        st.sampled_from(["/w/f", "f"]),
        st.sampled_from([None, _PATCH]),
    ),
)
update_kinds = st.sampled_from(
    [
        "tool_call",
        "tool_call_update",
        "tool_call_content_chunk",
        "terminal_update",
        "terminal_output_chunk",
        "plan",
        "plan_update",
        "state_update",
        "usage_update",
        "agent_message_chunk",
        "agent_message",
        "config_option_update",
        "_custom",
    ]
)
_fields: dict[str, st.SearchStrategy[Any]] = {
    "toolCallId": _tool_call_ids,
    "terminalId": _terminal_ids,
    "title": values,
    "kind": values,
    "status": st.sampled_from(["pending", "completed", None, 3]),
    "content": st.lists(content_items, max_size=3) | values,
    "locations": values,
    "output": values,
    "data": st.sampled_from(["YQ==", "/w==", "%%", 4]),
    "exitStatus": values,
    "size": values,
    "_meta": values,
    "entries": values,
    "plan": values,
    "state": st.sampled_from(["idle", "running"]),
    "messageId": values,
    "configOptions": values,
    "rawOutput": values,
    "capabilities": values,
    "toolCall": st.fixed_dictionaries({"toolCallId": _tool_call_ids, "title": values}),
    "subject": st.fixed_dictionaries(
        {"toolCallId": _tool_call_ids},
        optional={"toolCall": st.fixed_dictionaries({"toolCallId": _tool_call_ids})},
    ),
    "path": st.sampled_from(["/w/f", "f"]),
    "cwd": st.sampled_from(["/w", None]),
}
update_fields = st.lists(st.sampled_from(sorted(_fields)), max_size=6, unique=True).flatmap(
    lambda keys: st.fixed_dictionaries({k: _fields[k] for k in keys})
)
methods = st.sampled_from(
    [
        "session/update",
        "session/prompt",
        "session/request_permission",
        "fs/read_text_file",
        "fs/write_text_file",
        "terminal/create",
        "terminal/output",
        "terminal/wait_for_exit",
        "terminal/release",
        "session/cancel",
        "$/cancel_request",
        "session/new",
        "initialize",
        "session/load",
        "tool_call/cancel",
        "_x",
    ]
)


@st.composite
def message(draw: st.DrawFn) -> tuple[Direction, dict[str, object]]:
    """One message: a request, notification, response or error, fields of any type."""
    d = draw(st.sampled_from([C, A]))
    ident = draw(st.integers(0, 3))
    if draw(st.booleans()):  # a response or an error
        result = draw(
            values
            | st.fixed_dictionaries(
                {},
                optional={
                    "terminalId": _terminal_ids,
                    "content": st.sampled_from(["a\n", "b\n"]),
                    "output": st.sampled_from(["ok\r\n", "\x1b[1mx"]),
                    "exitCode": st.integers(0, 1),
                    "sessionId": st.sampled_from(["s", "t"]),
                },
            )
        )
        body = draw(st.sampled_from([{"result": result}, {"error": {"code": -32800}}]))
        return d, {"jsonrpc": "2.0", "id": ident, **body}
    method = draw(methods)
    params: dict[str, object] = {"sessionId": draw(st.sampled_from(["s", "t", 1]))}
    if method == "session/update":
        params["update"] = {"sessionUpdate": draw(update_kinds), **draw(update_fields)}
    else:
        params.update(draw(update_fields))
    msg: dict[str, object] = {"jsonrpc": "2.0", "method": method, "params": params}
    if draw(st.booleans()):
        msg["id"] = ident
    return d, msg


def initialize(version: int) -> list[tuple[Direction, dict[str, object]]]:
    """``initialize`` and its answer, agreeing on ``version``."""
    asked = {"jsonrpc": "2.0", "id": 0, "method": "initialize"}
    return [
        (C, {**asked, "params": {"protocolVersion": version}}),
        (A, {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": version}}),
    ]


@st.composite
def frame_bytes(draw: st.DrawFn) -> tuple[Direction, bytes, Opcode | None]:
    """A frame as a peer may send it: mostly one message, sometimes a batch, padding, a
    BOM, noise, a binary WebSocket message."""
    d, m = draw(message())
    text = json.dumps(m, ensure_ascii=draw(st.booleans()))
    shape = draw(st.sampled_from(["plain"] * 12 + ["batch", "padded", "bom", "noise", "binary"]))
    opcode = None
    if shape == "batch":
        text = json.dumps([m, draw(message())[1]])
    elif shape == "padded":
        text = f"  {text} "
    elif shape == "bom":
        text = "\ufeff" + text
    elif shape == "noise":
        text = "\x1b[0m" + text
    elif shape == "binary":
        opcode = Opcode.BINARY
    return d, text.encode(), opcode


def frames_of(items: list[tuple[Direction, bytes, Opcode | None]]) -> list[Frame]:
    return [Frame(i, d, i * 1000, raw, True, op) for i, (d, raw, op) in enumerate(items)]


def import_frames(db: Path, frames: list[Frame], work: Path) -> int:
    """Put ``frames`` in ``db`` as a capture, as ``acp-proxy import`` does (the recorder's
    classification and pairing); its id."""
    path = work / "capture.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for fr in frames:
            line: dict[str, Any] = {
                "seq": fr.seq,
                "direction": fr.direction.value,
                "t_ns": fr.t_ns,
                "base64": base64.b64encode(fr.raw).decode(),
            }
            if fr.opcode is not None:
                line["opcode"] = fr.opcode.value
            f.write(json.dumps(line) + "\n")
    [imported] = import_file(db, path)
    return imported.capture_id


def import_after_initialize(
    db: Path, work: Path, version: int, items: list[tuple[Direction, bytes, Opcode | None]]
) -> int:
    """``items`` (drawn by :func:`frame_bytes`) after ``initialize`` in ``version``, put in
    ``db`` as a capture (:func:`import_frames`); its id."""
    init = [(d, json.dumps(m).encode(), None) for d, m in initialize(version)]
    return import_frames(db, frames_of([*init, *items]), work)

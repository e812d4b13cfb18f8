"""The filter language: what it reads, where it says a mistake is, and that its two
deciders — Python on a frame's fields, SQL on the ``messages`` table — agree."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_proxy.errors import FilterError, UsageError
from acp_proxy.filters import compile_filter, parse, sql_where
from acp_proxy.filters.parser import And, Match, Not, Or


def frame(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "method": None,
        "direction": "c2a",
        "kind": "notification",
        "session_id": None,
        "update_kind": None,
        "msg_id": None,
        "tool_call_id": None,
        "terminal_id": None,
        "error_code": None,
        "anomalies": (),
        "raw": b"{}",
    }
    base.update(kw)
    return base


def test_terms_and_operators_make_a_tree() -> None:
    assert parse("") is None
    assert parse("method:session/*") == Match("method", "session/*", 1)
    assert parse("a b") == And((Match("text", "a", 1), Match("text", "b", 3)))
    tree = parse("dir:c2a and (kind:request || -error:any)")
    assert tree == And(
        (
            Match("dir", "c2a", 1),
            Or((Match("kind", "request", 14), Not(Match("error", "any", 31)))),
        )
    )
    assert parse('text:"a b" or "x:y"') == Or((Match("text", "a b", 1), Match("text", "x:y", 15)))
    assert parse("re:/time(d|out)/") == Match("re", "time(d|out)", 1)
    assert parse("/a\\/b/") == Match("re", "a/b", 1)
    assert parse("not direction:a2c") == Not(Match("dir", "a2c", 5))


@pytest.mark.parametrize(
    ("src", "column"),
    [
        ("methd:x", 1),
        ("kind:answer", 1),
        ("a and (b", 7),
        ('x "open', 3),
        ("dir:c2a or", 11),
        ("a )", 3),
        ("re:/(/", 1),
        ("error:boom", 1),
    ],
)
def test_a_mistake_names_its_column(src: str, column: int) -> None:
    with pytest.raises(FilterError, match=f"column {column}"):
        parse(src)
    assert issubclass(FilterError, UsageError)


def test_python_decides_each_key() -> None:
    def ok(src: str, **kw: Any) -> bool:
        return compile_filter(parse(src))(frame(**kw))

    assert ok("method:session/*", method="session/prompt")
    assert not ok("method:session/*", method="fs/read")
    assert not ok("method:session/?", method="session/prompt")
    assert ok("method:[a]", method="[a]")  # a bracket is itself
    assert ok("update:tool_call*", update_kind="tool_call_update")
    assert ok("id:7", msg_id="7") and ok("id:7", msg_id='"7"') and not ok("id:7", msg_id="8")
    assert ok("error:any", kind="error") and ok("error:-32603", error_code=-32603)
    assert not ok("error:any", kind="response")
    assert ok("anomaly:orphan", anomalies=("late", "orphan"))
    assert not ok("anomaly:or", anomalies=("orphan",))
    assert ok("anomaly:any", anomalies=("x",)) and not ok("anomaly:any")
    assert ok("Hello", raw=b'{"t":"hello"}') and ok("re:h.llo", raw=b"hallo")
    assert ok("-dir:a2c") and not ok("!dir:c2a")


# ---- Python and SQL agree ---------------------------------------------------------------

_COLUMNS = (
    "method TEXT, direction TEXT, kind TEXT, session_id TEXT, update_kind TEXT, msg_id TEXT, "
    "tool_call_id TEXT, terminal_id TEXT, error_code INTEGER, anomalies TEXT, raw BLOB"
)
_NAMES = ["method", "direction", "kind", "session_id", "update_kind", "msg_id",
          "tool_call_id", "terminal_id", "error_code", "anomalies", "raw"]  # fmt: skip

_words = st.sampled_from(["a", "b", "s1", "x[", "session/prompt", "tool_call", "7", '"7"', ""])
_frames = st.builds(
    frame,
    method=st.none() | _words,
    direction=st.sampled_from(["c2a", "a2c"]),
    kind=st.sampled_from(["request", "response", "error", "notification"]),
    session_id=st.none() | _words,
    update_kind=st.none() | _words,
    msg_id=st.none() | _words,
    tool_call_id=st.none() | _words,
    error_code=st.none() | st.sampled_from([-32603, 7]),
    anomalies=st.lists(st.sampled_from(["orphan", "late", "dup"]), max_size=2).map(tuple),
    raw=st.sampled_from([b"{}", b"hello a", b"\xff b"]),
)
_values = st.sampled_from(["a", "s*", "session/*", "?", "x[", "tool_call*", "7", "*", "b"])
_terms = st.one_of(
    st.builds(lambda v: f"method:{v}", _values),
    st.builds(lambda v: f"update:{v}", _values),
    st.builds(lambda v: f"session:{v}", _values),
    st.builds(lambda v: f"tool:{v}", _values),
    st.builds(lambda v: f"id:{v}", _values),
    st.sampled_from(
        [
            "dir:c2a",
            "dir:a2c",
            "kind:error",
            "kind:request",
            "error:any",
            "error:-32603",
            "anomaly:any",
            "anomaly:late",
            "hello",
            "re:^\\{",
            "b",
        ]
    ),
)
_exprs = st.recursive(
    _terms,
    lambda inner: st.one_of(
        st.builds(lambda e: f"not ({e})", inner),
        st.builds(lambda a, b: f"({a}) and ({b})", inner, inner),
        st.builds(lambda a, b: f"({a}) or ({b})", inner, inner),
    ),
    max_leaves=6,
)


def _table(frames: list[dict[str, Any]]) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE TABLE messages (seq INTEGER PRIMARY KEY, {_COLUMNS})")
    for i, f in enumerate(frames):
        row = [",".join(f[n]) or None if n == "anomalies" else f[n] for n in _NAMES]
        conn.execute(f"INSERT INTO messages VALUES (?, {', '.join('?' * len(_NAMES))})", [i, *row])
    return conn


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(src=_exprs, frames=st.lists(_frames, min_size=1, max_size=12))
def test_sql_and_python_pick_the_same_frames(src: str, frames: list[dict[str, Any]]) -> None:
    tree = parse(src)
    test = compile_filter(tree)
    by_python = {i for i, f in enumerate(frames) if test(f)}
    cond, args, exact = sql_where(tree)
    conn = _table(frames)
    by_sql = {r[0] for r in conn.execute(f"SELECT seq FROM messages WHERE {cond}", args)}
    assert by_python <= by_sql  # a first cut never drops a frame that passes
    if exact:
        assert by_sql == by_python


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([*' ab:()"/\\!-&|*?', " and ", " or ", "not ", "kind:", "dir:c2a", "re:"]),
        max_size=20,
    ).map("".join)
    | st.text(max_size=40)
)
def test_any_text_parses_or_says_why(src: str) -> None:
    try:
        tree = parse(src)
    except FilterError as e:
        assert "column" in str(e)
        return
    compile_filter(tree)(frame())
    sql_where(tree)


def test_too_deep_or_too_long_is_refused() -> None:
    with pytest.raises(FilterError, match="nested too deep"):
        parse("!" * 5000 + "a")
    with pytest.raises(FilterError, match="too many terms"):
        parse("a " * 500)


@pytest.mark.parametrize(
    "src",
    [
        "method:x[",
        "method:[a]",
        "anomaly:late",
        "not anomaly:late",
        "not session:s1",
        "id:7",
        "not id:7",
        "not error:-32603",
        "update:tool_call*",
    ],
)
def test_sql_agrees_where_sql_differs_from_python(src: str) -> None:
    """Brackets (a class in SQL's GLOB), NULL columns under NOT, ids as numbers or strings."""
    frames = [
        frame(method="x[", anomalies=("late",), msg_id="7"),
        frame(method="[a]", session_id="s1", msg_id='"7"', error_code=-32603),
        frame(method="a", update_kind="tool_call_update"),
        frame(),
    ]
    tree = parse(src)
    cond, args, exact = sql_where(tree)
    assert exact
    by_sql = {r[0] for r in _table(frames).execute(f"SELECT seq FROM messages WHERE {cond}", args)}
    assert by_sql == {i for i, f in enumerate(frames) if compile_filter(tree)(f)}

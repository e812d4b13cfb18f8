"""Every rule, on a crafted capture: the right rule id and side, and nothing else."""

from __future__ import annotations

import pytest
from corpus import CASES, P1, P2, PROMPT, A, C, Case, chunk, frames, req, res

from acp_proxy.check.core.checker import Checker, check_frames
from acp_proxy.check.core.rules import RULES


def found(case: Case, **options: object) -> set[tuple[str, str]]:
    return {(f.rule, f.side) for f in check_frames(frames(case.entries), **options)}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_each_violation_gives_its_rule_and_nothing_else(case: Case) -> None:
    assert found(case, **case.options) == case.expected


def test_every_rule_has_a_violation_in_the_corpus() -> None:
    covered = {rule for case in CASES for rule, _ in case.expected}
    assert covered == set(RULES)


@pytest.mark.parametrize("case", [c for c in CASES if c.expected], ids=lambda c: c.name)
def test_ignore_drops_the_rule(case: Case) -> None:
    rules = {r for r, _ in case.expected}
    opts = {k: v for k, v in case.options.items() if k == "ending"}
    assert found(case, ignore=rules, **opts) != case.expected
    if any(RULES[r].covers_schema for r in rules):  # the schema finding it replaced shows
        assert {r for r, _ in found(case, ignore=rules, **opts)} == {"schema.invalid"}
        rules.add("schema.invalid")
    assert found(case, ignore=rules, **opts) == set()


def test_unstable_methods_pass_with_unstable() -> None:
    case = next(c for c in CASES if c.name == "schema: unstable method")
    assert found(case, unstable=True) == set()


def test_findings_carry_seq_spec_and_excerpt() -> None:
    case = next(c for c in CASES if c.name == "unpaired response")
    (f,) = check_frames(frames(case.entries))
    assert f.seq == len(case.entries) - 1
    assert f.spec.startswith("https://agentclientprotocol.com/protocol/v1/")
    assert '"id":99' in f.excerpt and f.severity == "error"


def test_schema_reason_names_the_field() -> None:
    case = next(c for c in CASES if c.name == "schema: chunk without content")
    (f,) = check_frames(frames(case.entries))
    assert "content" in f.message and "required" in f.message


def test_feed_returns_findings_as_they_happen() -> None:
    checker = Checker()
    got = [
        checker.feed(frame, flags)
        for frame, flags in frames([*P1, (C, req(5, "_x/q", {})), (A, res(5, {})), (A, res(5, {}))])
    ]
    assert [len(g) for g in got] == [0, 0, 0, 0, 0, 0, 1]
    assert got[-1][0].rule == "rpc.duplicate-response"
    assert checker.finish() == []


def test_a_side_and_a_limit_keep_only_what_is_shown_and_count_it_all() -> None:
    # 40 answers nobody asked for (the agent's), 40 more from the client
    stray = [(A, res(100 + i, {})) for i in range(40)] + [(C, res(200 + i, {})) for i in range(40)]
    every = Checker().run(frames([*P1, *stray]))
    kept = Checker(keep_per_rule=3, side="agent").run(frames([*P1, *stray]))
    agent = [f for f in every.findings if f.side == "agent"]
    assert len(agent) == 40 and len(every.findings) == 80
    assert kept.findings == agent[:3]  # the first of each rule, in order, of the one side
    assert kept.counts == {"rpc.unpaired-response": 40}


def test_forced_version_checks_v1_traffic_as_v2() -> None:
    case = CASES[0]  # clean v1
    rules = {r for r, _ in found(case, version=2)}
    assert "schema.invalid" in rules


def test_docs_describe_every_rule_with_its_severity_and_side() -> None:
    from support.paths import TESTS

    text = (TESTS.parent / "docs" / "check.md").read_text()
    rows = {
        line.split("|")[1].strip().strip("`"): line
        for line in text.splitlines()
        if line.startswith("| `")
    }
    assert set(rows) == set(RULES)
    for rule_id, rule in RULES.items():
        cells = [c.strip() for c in rows[rule_id].split("|")]
        assert cells[2] == rule.severity and cells[3] == rule.side, rule_id
        assert rule.spec.split("#")[0] in rows[rule_id], rule_id


def test_patch_semantics_keep_an_omitted_capability_and_clear_a_null_one() -> None:
    case = next(c for c in CASES if c.name == "v2 cancel capability follows patch semantics")
    found_ = check_frames(frames(case.entries))
    assert [(f.rule, f.seq) for f in found_] == [("v2.cancel-capability", len(case.entries) - 2)]


def test_findings_of_the_end_point_at_their_own_frame_or_at_none() -> None:
    # the end of a capture has no frame of its own: a finding there must not borrow the
    # seq or the excerpt of the frame looked at just before it
    never = frames([(A, chunk()), (C, req(9, "_x/q", {}))])
    by_rule = {f.rule: f for f in check_frames(never)}
    assert by_rule["rpc.unanswered"].seq == 1
    assert (by_rule["acp.no-initialize"].seq, by_rule["acp.no-initialize"].excerpt) == (None, "")

    log = (A, b"loading", {"terminated": False})
    unfinished = [*P2, (C, PROMPT), (A, res(2, {"messageId": "m1"})), log]
    split = (A, b'{"jsonrpc"', {"flags": ["split"]})
    by_rule = {f.rule: f for f in check_frames(frames([*unfinished, split]))}
    assert by_rule["framing.unterminated"].excerpt == "loading"
    assert (by_rule["v2.turn-unfinished"].seq, by_rule["v2.turn-unfinished"].excerpt) == (
        len(P2),
        "",
    )
    assert (by_rule["capture.incomplete"].seq, by_rule["capture.incomplete"].excerpt) == (None, "")

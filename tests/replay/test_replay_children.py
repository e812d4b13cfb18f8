"""Child sessions and retried prompts in ``replay client`` and ``diff`` (docs/protocol.md
§13.1, §13.3): a child the agent created has a fresh id in every run and is the child
announced at the same place of its parent; its work belongs to the parent's turn; a prompt
retried with the same ``idempotencyKey`` is one turn, its retries shown, never a difference."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from support.paths import DATA as ALL_DATA
from support.replay import CLI, DATA, replay_agent_cmd, replay_client_cmd

CHILD_CANCEL = DATA / "v2-child-cancel.jsonl"
TWO_PARENTS = DATA / "v2-two-parents.jsonl"
SUBAGENTS = ALL_DATA / "reconstruct" / "v2-subagents.jsonl"


def _rewritten(src: Path, dst: Path, *, swap: tuple[tuple[int, int], ...] = (),
               drop: tuple[int, ...] = (), **renames: str) -> Path:  # fmt: skip
    """A copy of a jsonl recording: frames' texts swapped two by two, frames dropped,
    strings renamed (``old=new``, in the frames' texts)."""
    rows = [json.loads(line) for line in src.read_text().splitlines()]
    for a, b in swap:
        rows[a]["text"], rows[b]["text"] = rows[b]["text"], rows[a]["text"]
    rows = [r for r in rows if r["seq"] not in drop]
    for r in rows:
        for old, new in renames.items():
            r["text"] = r["text"].replace(f'"{old.replace("_", "-")}"', f'"{new}"')
    dst.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return dst


def _diff(a: Path, b: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "diff", str(a), str(b), *extra], capture_output=True,
                          text=True, timeout=60)  # fmt: skip


def test_replay_client_sends_to_the_fresh_child_the_agent_announced(tmp_path: Path) -> None:
    """The recorded client cancelled child ``sub-1``; the changed agent names it ``kid-77``:
    the cancel must reach ``kid-77``, or the child never ends as recorded."""
    changed = _rewritten(CHILD_CANCEL, tmp_path / "changed.jsonl", sub_1="kid-77")
    db = tmp_path / "r.sqlite"
    r = subprocess.run(
        [*replay_client_cmd(db, str(CHILD_CANCEL), "--timeout", "10"), "--",
         *replay_agent_cmd(db, str(changed))],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[-1] == "no divergence"
    note = "turn 1 (session 1): its prompt was sent again 1× (idempotencyKey submit-1)"
    assert f"  note · recorded {note}" in lines
    assert f"  note · replayed {note}" in lines
    sent = subprocess.run([*CLI, "show", "--db", str(db), "1", "--method", "session/cancel",
                           "--json"], capture_output=True, text=True, timeout=60)  # fmt: skip
    assert '\\"sessionId\\":\\"kid-77\\"' in sent.stdout


def test_replay_client_counts_a_retried_prompt_as_one_turn(tmp_path: Path) -> None:
    db = tmp_path / "r.sqlite"
    r = subprocess.run(
        [*replay_client_cmd(db, str(CHILD_CANCEL), "--json"), "--",
         *replay_agent_cmd(db, str(CHILD_CANCEL))],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    out = json.loads(r.stdout)
    for run in ("recorded", "replayed"):
        (turn,) = out[run]["turns"]
        assert turn["retries"] == ["submit-1"]
        assert turn["events"].count("answers session/prompt") == 1
        # the child's work is the parent's turn's, up to its cancelled end
        assert turn["events"][-3:] == ["state_update", "agent_message", "state_update"]


def test_diff_pairs_children_by_their_parent(tmp_path: Path) -> None:
    """Two sessions at work at once; B's tester announces itself and speaks before the
    linter, both under fresh ids. Paired by order of mention, B's tester would be A's
    linter."""
    b = _rewritten(TWO_PARENTS, tmp_path / "b.jsonl", swap=((10, 11), (12, 13)), c_lint="x-9",
                   c_test="x-3")  # fmt: skip
    r = _diff(TWO_PARENTS, b)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1].startswith("no differences")


def test_diff_an_extra_child_shifts_no_other_session() -> None:
    """B's agent started two subagents where A's started one, then the client opened a
    second session: the extra child is the one difference. Paired by order of mention,
    B's second session would be A's child, and its answer a difference too."""
    r = _diff(DATA / "v2-one-child.jsonl", DATA / "v2-two-children.jsonl")
    assert r.returncode == 1
    assert r.stdout.splitlines()[1:] == [
        "2 difference(s) between " + r.stdout.splitlines()[1].split("difference(s) between ")[1],
        "  turn 1 (session 1) · after message 4: A nothing; B subagent_update → agent_message",
        "  turn 1 (session 1) · after message 5: A nothing; B state_update",
    ]


def test_diff_puts_a_childs_work_in_its_parents_turn(tmp_path: Path) -> None:
    b = _rewritten(TWO_PARENTS, tmp_path / "b.jsonl", c_lint="x-9", c_test="x-3")
    b.write_text(b.read_text().replace('\\"status\\":\\"completed\\"', '\\"status\\":\\"failed\\"'))
    r = _diff(TWO_PARENTS, b)
    assert r.returncode == 1
    assert (
        "  turn 2 (session 2) · tool call 1 'cargo test' statuses: A in_progress → completed; "
        "B in_progress → failed"
    ) in r.stdout.splitlines()


def test_diff_a_retry_is_no_difference(tmp_path: Path) -> None:
    once = _rewritten(SUBAGENTS, tmp_path / "once.jsonl", drop=(5, 7))
    r = _diff(SUBAGENTS, once)
    assert r.returncode == 0, r.stdout
    lines = r.stdout.splitlines()
    assert lines[0].startswith("compared 1 turn(s)")
    assert lines[1] == (
        "  note · A turn 1 (session 1): its prompt was sent again 1× (idempotencyKey submit-1)"
    )
    out = json.loads(_diff(SUBAGENTS, once, "--json").stdout)
    assert out["summary"]["a"]["turns"][0]["retries"] == ["submit-1"]
    assert "retries" not in out["summary"]["b"]["turns"][0]

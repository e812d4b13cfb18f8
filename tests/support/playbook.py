"""Playbooks for the pure cores: these inputs in, these outputs out, step by step.

A playbook drives one sans-I/O core through a :class:`Driver`, which turns an input (a
record, a frame, a live message) into what the core gives back, each output in a small
comparable form. A test writes the script as it reads::

    assert (
        Playbook(RecorderDriver())  # tests/record/records.py
        >> Open()
        << Opened("u1")
        >> Chunk(C2A, b'{"jsonrpc":"2.0","id":0,"method":"a"}\\n{"jsonrpc"')
        << Frame(0, "c2a", b'{"jsonrpc":"2.0","id":0,"method":"a"}')
        >> Chunk(C2A, b':"2.0","method":"b"}\\n')
        << Frame(1, "c2a", b'{"jsonrpc":"2.0","method":"b"}')
    )

``>>`` is an input, ``<<`` the outputs expected from the inputs before it. Nothing runs
until the playbook is asserted; then every input is fed in order, and the outputs each one
produced must be exactly those written after it (``...`` stands for any outputs up to the
next one written; a :class:`Like` for any output its test accepts). A failure names the
step — its number, its line in the test and what it was — and shows the script up to
there with what came out, so a broken rule is found without a debugger. The cores run in
microseconds: no process, socket or file.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["Driver", "Like", "Playbook", "PlaybookFailure"]

In = TypeVar("In")
In_contra = TypeVar("In_contra", contravariant=True)


class Driver(Protocol[In_contra]):
    """One core behind a playbook: ``feed`` an input, get its outputs in a comparable form."""

    def feed(self, item: In_contra) -> list[Any]: ...


@dataclass(frozen=True)
class Like:
    """An expected output given by a test rather than a value (an error message that need
    only contain some words, say); ``what`` says what it must be, in a failure report."""

    what: str
    test: Callable[[Any], bool]

    def __repr__(self) -> str:
        return f"Like({self.what})"


class PlaybookFailure(AssertionError):
    """The outputs of a step are not the ones the playbook says."""


@dataclass
class _Step:
    item: Any
    where: str
    expected: list[Any] = field(default_factory=list)
    got: list[Any] | None = None


def _caller() -> str:
    """The file and line of the test that wrote the step: where the ``>>`` or ``<<``
    expression ends (a playbook is one statement over many lines)."""
    frame = sys._getframe(2)
    positions = list(frame.f_code.co_positions())
    line = positions[frame.f_lasti // 2][1] if frame.f_lasti // 2 < len(positions) else None
    return f"{frame.f_code.co_filename.rsplit('/', 1)[-1]}:{line or frame.f_lineno}"


class Playbook(Generic[In]):
    """A script of inputs (``>>``) and the outputs each must give (``<<``); asserting it
    runs it. ``show`` renders an input or an output in a failure report."""

    def __init__(self, driver: Driver[In], *, show: Callable[[Any], str] = repr) -> None:
        self.driver = driver
        self.show = show
        self.steps: list[_Step] = []
        self._ran = False

    def __rshift__(self, item: In) -> Playbook[In]:
        self.steps.append(_Step(item, _caller()))
        return self

    def __lshift__(self, output: Any) -> Playbook[In]:
        if not self.steps:
            raise TypeError("a playbook's outputs follow an input (>> first)")
        self.steps[-1].expected.append(output)
        return self

    def __bool__(self) -> bool:
        __tracebackhide__ = True  # the report names the step; this frame adds nothing
        if self._ran:
            raise TypeError("a playbook runs once; build a new one")
        self._ran = True
        for n, step in enumerate(self.steps, start=1):
            step.got = self.driver.feed(step.item)
            if not _matches(step.expected, step.got):
                raise PlaybookFailure(self._report(n))
        return True

    def _report(self, failed: int) -> str:
        lines = [f"step {failed} ({self.steps[failed - 1].where}) gave other outputs:"]
        for n, step in enumerate(self.steps[:failed], start=1):
            mark = "!!" if n == failed else "  "
            lines.append(f"{mark} {n:>2} >> {self.show(step.item)}   [{step.where}]")
            if n == failed:
                lines += [f"        expected << {self.show(e)}" for e in step.expected]
                lines += [f"        got      << {self.show(g)}" for g in step.got or []]
                if not step.expected and not step.got:
                    lines.append("        (nothing expected, nothing came)")
            else:
                lines += [f"           << {self.show(g)}" for g in step.got or []]
        return "\n".join(lines)


def _matches(expected: list[Any], got: list[Any]) -> bool:
    """Whether ``got`` is ``expected``, each ``...`` standing for any run of outputs."""
    if not expected:
        return not got
    head, rest = expected[0], expected[1:]
    if head is Ellipsis:
        return any(_matches(rest, got[i:]) for i in range(len(got) + 1))
    if not got:
        return False
    same = head.test(got[0]) if isinstance(head, Like) else got[0] == head
    return same and _matches(rest, got[1:])

"""Findings as text for people, JSON for scripts, JUnit XML and SARIF for CI.

What belongs here: rendering :class:`~acp_proxy.check.core.findings.Finding` values of one or more
captures. Each function returns a string; the command prints it (text through
:func:`acp_proxy.cli.common.echo`, so controls a peer put in an excerpt are shown as
escapes) or writes it to a file. XML is built with :mod:`xml.etree`, which escapes every
value; characters XML 1.0 cannot hold at all are written as ``\\uXXXX``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from acp_proxy.check.core.findings import ERROR, SEVERITIES, WARNING, Finding
from acp_proxy.check.core.rules import RULES

__all__ = [
    "TEXT_LIMIT",
    "Result",
    "counts",
    "render_json",
    "render_junit",
    "render_sarif",
    "render_text",
]

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_TOOL_URI = "https://agentclientprotocol.com"
TEXT_LIMIT = 20
"""Findings of one rule the text report shows; the rest are counted ("… and N more")."""


@dataclass(slots=True)
class Result:
    """The findings of one capture, and what it was checked as. ``rule_counts``: how many
    findings of each rule there were, when ``findings`` holds only the first of each (the
    text report: a capture wrong in every frame is not held in memory); else counted from
    ``findings``."""

    name: str
    version: int
    frames: int
    findings: list[Finding]
    rule_counts: dict[str, int] | None = None

    def count(self) -> dict[str, int]:
        """How many findings of each rule."""
        if self.rule_counts is not None:
            return self.rule_counts
        out: dict[str, int] = {}
        for f in self.findings:
            out[f.rule] = out.get(f.rule, 0) + 1
        return out


def _order(f: Finding) -> tuple[int, int]:
    return (f.seq if f.seq is not None else 1 << 62, 0)


def counts(results: Sequence[Result]) -> dict[str, int]:
    out = dict.fromkeys(SEVERITIES, 0)
    for r in results:
        for rule_id, n in r.count().items():
            out[RULES[rule_id].severity] += n
    return out


def render_text(results: Sequence[Result], *, limit: int = TEXT_LIMIT) -> str:
    """Grouped by rule, errors first; each finding with seq, side, reason and excerpt."""
    lines: list[str] = []
    rank = {s: i for i, s in enumerate(SEVERITIES)}
    for r in results:
        lines.append(f"{r.name}: ACP v{r.version}, {r.frames} frames")
        total = r.count()
        by_rule: dict[str, list[Finding]] = {}
        for f in sorted(r.findings, key=_order):
            by_rule.setdefault(f.rule, []).append(f)
        if not by_rule:
            lines.append("  no findings")
        for rule_id in sorted(by_rule, key=lambda k: (rank[RULES[k].severity], k)):
            found = by_rule[rule_id]
            rule = RULES[rule_id]
            lines.append(f"  {rule.severity} {rule_id} ×{total[rule_id]}: {rule.title}")
            lines.append(f"    spec: {rule.spec}")
            for f in found[:limit]:
                where = f"seq {f.seq}" if f.seq is not None else "capture"
                lines.append(f"    {where} [{f.side}] {f.message}")
                if f.excerpt:
                    lines.append(f"      {f.excerpt}")
            if total[rule_id] > min(limit, len(found)):
                lines.append(f"    … and {total[rule_id] - min(limit, len(found))} more")
        lines.append("")
    c = counts(results)
    lines.append(f"{c[ERROR]} errors, {c[WARNING]} warnings, {c['info']} notes")
    return "\n".join(lines) + "\n"


def _finding(f: Finding) -> dict[str, Any]:
    return {
        "rule": f.rule,
        "severity": f.severity,
        "side": f.side,
        "seq": f.seq,
        "message": f.message,
        "excerpt": f.excerpt,
        "related": list(f.related),
        "spec": f.spec,
    }


def render_json(results: Sequence[Result]) -> str:
    doc = {
        "captures": [
            {
                "name": r.name,
                "protocol_version": r.version,
                "frames": r.frames,
                "findings": [_finding(f) for f in sorted(r.findings, key=_order)],
            }
            for r in results
        ],
        "counts": counts(results),
    }
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"


def _x(text: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def render_junit(results: Sequence[Result]) -> str:
    """One test suite per capture, one test case per rule: a failure for each rule with
    errors, the warnings and notes in ``system-out``."""
    suites = ET.Element("testsuites", name="acp-proxy check")
    total = failures = 0
    for r in results:
        by_rule: dict[str, list[Finding]] = {k: [] for k in RULES}
        for f in sorted(r.findings, key=_order):
            by_rule[f.rule].append(f)
        errors = sum(1 for fs in by_rule.values() if any(f.severity == ERROR for f in fs))
        suite = ET.SubElement(
            suites, "testsuite", name=_x(r.name), tests=str(len(by_rule)), failures=str(errors)
        )
        total += len(by_rule)
        failures += errors
        for rule_id, found in by_rule.items():
            case = ET.SubElement(suite, "testcase", classname=_x(r.name), name=rule_id)
            text = "\n".join(f"seq {f.seq} [{f.side}] {f.message}\n  {f.excerpt}" for f in found)
            if any(f.severity == ERROR for f in found):
                bad = ET.SubElement(
                    case,
                    "failure",
                    message=_x(f"{len(found)} × {RULES[rule_id].title}"),
                    type=rule_id,
                )
                bad.text = _x(text + f"\nspec: {RULES[rule_id].spec}")
            elif found:
                ET.SubElement(case, "system-out").text = _x(text)
    suites.set("tests", str(total))
    suites.set("failures", str(failures))
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def render_sarif(results: Sequence[Result], version: str) -> str:
    """SARIF 2.1.0: one run, every rule described, a result per finding located at its
    capture and frame."""
    rules = [
        {
            "id": r.id,
            "shortDescription": {"text": r.title},
            "helpUri": r.spec,
            "defaultConfiguration": {"level": _SARIF_LEVEL[r.severity]},
        }
        for r in RULES.values()
    ]
    index = {rid: i for i, rid in enumerate(RULES)}
    out: list[dict[str, Any]] = []
    for r in results:
        for f in sorted(r.findings, key=_order):
            out.append(
                {
                    "ruleId": f.rule,
                    "ruleIndex": index[f.rule],
                    "level": _SARIF_LEVEL[f.severity],
                    "message": {"text": f"[{f.side}] {f.message}"},
                    "locations": [
                        {
                            "logicalLocations": [
                                {
                                    "name": f"seq {f.seq}" if f.seq is not None else "capture",
                                    "fullyQualifiedName": f"{r.name}/seq/{f.seq}",
                                    "kind": "element",
                                }
                            ]
                        }
                    ],
                    "properties": {"side": f.side, "seq": f.seq, "excerpt": f.excerpt},
                }
            )
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "acp-proxy check",
                        "version": version,
                        "informationUri": _TOOL_URI,
                        "rules": rules,
                    }
                },
                "results": out,
            }
        ],
    }
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"

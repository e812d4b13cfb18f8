"""Passive conformance checking of recorded ACP traffic: is each side speaking ACP?

The pure checker (:mod:`~acp_proxy.check.core`), its rules (:mod:`~acp_proxy.check.rules`),
the bundled schemas (:mod:`~acp_proxy.check.schemas`) and the report formats
(:mod:`~acp_proxy.check.report`); :mod:`~acp_proxy.check.source` reads captures from a
database or a ``jsonl`` export. ``docs/check.md`` lists every rule.
"""

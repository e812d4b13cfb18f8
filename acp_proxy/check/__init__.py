"""Passive conformance checking of recorded ACP traffic: is each side speaking ACP?

The checker itself is pure (:mod:`acp_proxy.check.core`: frames in, findings out). Around
it: :mod:`~acp_proxy.check.source` reads captures from a database or a ``jsonl`` export,
:mod:`~acp_proxy.check.live` follows a capture being recorded (``record --check``), and
:mod:`~acp_proxy.check.refresh` refreshes the bundled schemas. ``docs/check.md`` lists
every rule.
"""

"""Passive conformance checking of recorded ACP traffic: is each side speaking ACP?

The pure checker: :mod:`~acp_proxy.check.core` drives the checks of one capture —
:mod:`~acp_proxy.check.framing`, :mod:`~acp_proxy.check.rpc`,
:mod:`~acp_proxy.check.validate` (the bundled schemas, :mod:`~acp_proxy.check.schemas`), and
the behaviour rules by area: :mod:`~acp_proxy.check.lifecycle`,
:mod:`~acp_proxy.check.capabilities`, :mod:`~acp_proxy.check.turns`,
:mod:`~acp_proxy.check.tools` — over the state they share (:mod:`~acp_proxy.check.context`).
The rule table is :mod:`~acp_proxy.check.rules`, what a check produces
:mod:`~acp_proxy.check.findings`, the report formats :mod:`~acp_proxy.check.report`.
Around it: :mod:`~acp_proxy.check.source` reads captures from a database or a ``jsonl``
export, :mod:`~acp_proxy.check.live` follows a capture being recorded. ``docs/check.md``
lists every rule.
"""

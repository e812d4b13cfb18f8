"""``acp-proxy ui``: a live web inspector over the recordings database.

:mod:`acp_proxy.ui.server` serves the page (static files in ``static/``) and its JSON API,
:mod:`acp_proxy.ui.api` computes what the routes answer. ``docs/ui.md`` describes both.
"""

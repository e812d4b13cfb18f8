"""``acp-proxy ui``: a live web inspector over the recordings database.

:mod:`acp_proxy.ui.server` puts the HTTP server together (:mod:`~acp_proxy.ui.state`,
:mod:`~acp_proxy.ui.admission`, :mod:`~acp_proxy.ui.indexer`), :mod:`acp_proxy.ui.handler`
serves the page (static files in ``static/``) and its JSON API, :mod:`acp_proxy.ui.api`
computes what the routes answer. ``docs/ui.md`` describes the inspector.
"""

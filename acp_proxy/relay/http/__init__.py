"""The Streamable HTTP man in the middle (docs/http.md).

``listener.py`` accepts connections and tells what each one speaks; ``h1.py`` and
``h2.py`` drive an HTTP/1.1 and an HTTP/2 client connection; ``exchange.py`` relays and
records one request, whichever HTTP each leg speaks; ``upstreams.py`` keeps the upstream
connections of a client connection; ``body.py`` relays an answer body piece by piece,
recording each piece first; ``connections.py`` keeps one capture per ACP connection
across TCP connections; ``front.py`` is what the connections share; ``upgrade.py`` hands
WebSocket upgrades to the WebSocket relay.
"""

from acp_proxy.relay.http.listener import serve

__all__ = ["serve"]

"""The Streamable HTTP man in the middle (docs/http.md).

``listener.py`` accepts connections and relays each exchange; ``body.py`` relays an answer
body piece by piece, recording each piece first; ``connections.py`` keeps one capture per
ACP connection across TCP connections; ``upgrade.py`` hands WebSocket upgrades to the
WebSocket relay.
"""

from acp_proxy.relay.http.listener import serve

__all__ = ["serve"]

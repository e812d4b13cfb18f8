"""HTTP/1.1 endpoints on ``h11`` (``legs.py``) and the header policy of a relayed exchange
(``headers.py``)."""

"""ACP traffic as span descriptions, without I/O.

What belongs here: the fold of a capture's frames into traces (:mod:`.fold`, :mod:`.tree`,
on :mod:`acp_proxy.reconstruct`), the spans and their attributes (:mod:`.mapping`, with
subagents and the opt-in GenAI conventions in :mod:`.agents`), the values they speak in
(:mod:`.model`) and their OTLP/JSON encoding (:mod:`.otlpjson`). Sending spans is the rest
of :mod:`acp_proxy.otel`; ``tests/test_layers.py`` keeps this package free of I/O.
"""

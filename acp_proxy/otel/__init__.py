"""ACP sessions as OpenTelemetry traces.

What belongs here: the pure mapping from recorded frames to span descriptions
(:mod:`acp_proxy.otel.fold`, :mod:`acp_proxy.otel.tree`, :mod:`acp_proxy.otel.mapping`, built
on :mod:`acp_proxy.reconstruct`), the values it speaks
in (:mod:`acp_proxy.otel.model`), the OTLP/JSON encoding of those values
(:mod:`acp_proxy.otel.otlpjson`, no dependency), and the thin adapters to the official
OpenTelemetry SDK (:mod:`acp_proxy.otel.sdk`: the OTLP/HTTP exporter behind a bounded
queue) and to the recorder process (:mod:`acp_proxy.otel.live`). Only ``sdk`` and ``live``
need the optional ``acp-proxy[otel]`` extra. ``docs/otel.md`` documents the mapping.
"""

"""ACP sessions as OpenTelemetry traces.

What belongs here: the pure mapping from recorded frames to span descriptions and their
OTLP/JSON encoding (:mod:`acp_proxy.otel.core`), and the thin adapters around it: to the
official OpenTelemetry SDK (:mod:`acp_proxy.otel.sdk`: the OTLP/HTTP exporter behind a
bounded queue), to the recorder process (:mod:`acp_proxy.otel.live`) and to a stored
capture (:mod:`acp_proxy.otel.source`). Only ``sdk`` and ``live`` need the optional
``acp-proxy[otel]`` extra. ``docs/otel.md`` documents the mapping.
"""

"""The recorder's sans-I/O core: journal records in, typed rows out.

What belongs here: what recording decides without touching a file, a pipe or SQLite — the
journal's record format (:mod:`.wire`), the state kept per capture and stream
(:mod:`.state`), cutting streams into frames and deriving their columns (:mod:`.derive`),
the rows made (:mod:`.rows`) and the machine that turns records into rows
(:mod:`.machine`). The journal, the recorder process and its SQL around it are the rest of
:mod:`acp_proxy.record`; ``tests/test_layers.py`` keeps this package free of I/O.
"""

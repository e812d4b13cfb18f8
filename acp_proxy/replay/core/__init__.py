"""Replay's sans-I/O core: the stand-ins as state machines, and comparing runs.

What belongs here: recorded and live messages and matching them (:mod:`.match`), the form
they are compared in (:mod:`.canonical`), sessions and paths mapped between runs
(:mod:`.mapper`), the stand-in agent (:mod:`.agent`, with when each recorded message may go
in :mod:`.order`) and client (:mod:`.client`), summaries of a run and their differences
(:mod:`.summary`, :mod:`.compare`, :mod:`.detail`, :mod:`.ending`) and the differences laid
out as text (:mod:`.report`). Values in, values out: serving a recording and driving an
agent are the rest of :mod:`acp_proxy.replay`; ``tests/test_layers.py`` keeps this package
free of I/O.
"""
